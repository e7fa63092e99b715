// SPDX-License-Identifier: BSD-2-Clause
// The decision record of warrantd(7) §3.1, built and checked exactly as the
// worker checks it (src/record.c), before anything is signed. Pure: `now`
// is an argument.
import { randomBytes } from 'node:crypto';

export const TEXT_FIELD_MAX = 1024; // record.c TEXT_FIELD_MAX
export const ID_LEN = 26; // ctl.h CTL_ID_LEN
export const TERMINAL = new Set(['done', 'expired', 'denied', 'failed', 'dead', 'cancelled']);
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const ID_RE = /^[A-Za-z0-9._-]{1,64}$/;
const TRACE_RE = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?Z$/;

export class WarrantError extends Error {
  constructor(message) { super(message); this.name = this.constructor.name; }
}
/** The worker would dead-letter the record (record-invalid); `field` names the member. */
export class RecordError extends WarrantError {
  constructor(field, message) { super(`${field}: ${message}`); this.field = field; this.code = 'record-invalid'; }
}
export class UnknownActionError extends RecordError {
  constructor(field, message) { super(field, message); this.code = 'unknown-action'; }
}
export class RecordExistsError extends WarrantError {
  constructor(id) { super(`recordId: decision ${id} exists already`); this.field = 'recordId'; this.recordId = id; }
}
export class KeyFileError extends WarrantError {}
export class ConfigError extends WarrantError {}
export class NotPermittedError extends WarrantError {}
export class WaitTimeout extends WarrantError {
  constructor(id, status) { super(`${id}: not finished (state ${status ? status.state : null})`); this.recordId = id; this.status = status; }
}

// random bytes fetched 256 ids at a time: one read of the kernel's source
// costs more than the rest of an id
let pool = Buffer.alloc(0), used = 0;
const ID_TABLE = Buffer.from(Array.from({ length: 256 }, (_, b) => ALPHABET.charCodeAt(b & 31)));
export function newId() {
  if (used + ID_LEN > pool.length) { pool = randomBytes(ID_LEN * 256); used = 0; }
  const out = Buffer.allocUnsafe(ID_LEN);
  for (let i = 0; i < ID_LEN; i++) out[i] = ID_TABLE[pool[used + i]];
  pool.fill(0, used, used + ID_LEN);
  used += ID_LEN;
  return out.toString('latin1');
}

const pad = (n, w) => String(n).padStart(w, '0');
/** RFC 3339 UTC with milliseconds, as wtime_format_rfc3339. */
let lastMs = null, lastText = null;
export function fmtTime(ms) {
  if (ms === lastMs) return lastText;
  lastMs = ms;
  return (lastText = fmtTime1(ms));
}
function fmtTime1(ms) {
  const d = new Date(ms);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}T` +
    `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.${pad(d.getUTCMilliseconds(), 3)}Z`;
}

export function parseTime(s) {
  const m = RFC3339.exec(s);
  if (!m) return NaN;
  const ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
  return ms + (m[7] ? +(m[7] + '00').slice(0, 3) : 0);
}

/** A time: a Date, epoch milliseconds (number), an RFC 3339 UTC string, or {in: ms from now}. */
export function toMs(field, v, now) {
  if (v instanceof Date) return v.getTime();
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string') {
    const ms = parseTime(v);
    if (Number.isNaN(ms)) throw new RecordError(field, 'not an RFC 3339 time in UTC (YYYY-MM-DDTHH:MM:SS[.frac]Z)');
    return ms;
  }
  if (v && typeof v === 'object' && Number.isInteger(v.in)) return now + v.in;
  throw new RecordError(field, 'not a time');
}

// not String.prototype.isWellFormed: Debian 12's Node is 18
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const control = (c) => c < 0x20 || c === 0x7f; // record.c control_char

function utf8(field, s) {
  if (typeof s !== 'string') throw new RecordError(field, 'not a string');
  if (LONE_SURROGATE.test(s)) throw new RecordError(field, 'not valid UTF-8');
  return Buffer.from(s, 'utf8');
}
function need(field, s) {
  const b = utf8(field, s);
  if (b.length === 0) throw new RecordError(field, 'empty');
  return b;
}
function text(field, s) {
  const b = need(field, s);
  if (b.length > TEXT_FIELD_MAX || b.some(control))
    throw new RecordError(field, 'longer than 1024 bytes or has a control character');
}

export const idValid = (id) => typeof id === 'string' && ID_RE.test(id) && id !== '.' && id !== '..';

export function resourceProblem(r) {
  for (let i = 0; i < r.length; i++) {
    const c = r.charCodeAt(i);
    if (c === 0x5c || control(c)) return "contains '\\' or a control character";
  }
  for (const seg of r.split('/'))
    if (seg === '' || seg === '*' || seg === '.' || seg === '..')
      return "a segment between '/' is empty, '*', '.' or '..'";
  return null;
}

export function checkTraceparent(tp) {
  if (typeof tp !== 'string' || !TRACE_RE.test(tp) || tp.slice(0, 2) !== '00' ||
      /^0+$/.test(tp.slice(3, 35)) || /^0+$/.test(tp.slice(36, 52)))
    throw new RecordError('traceparent', 'not a W3C traceparent');
  return tp;
}

export class Policy {
  constructor({ maxWindowS = 604800, clockSkewS = 60, maxBytes = 16384, issuer = null, actions = null } = {}) {
    this.maxWindowMs = maxWindowS * 1000;
    this.clockSkewMs = clockSkewS * 1000;
    this.maxBytes = maxBytes;
    this.issuer = issuer;
    this.actions = actions ? new Set(actions) : null;
  }
}

/** The checked payload in the worker's member order (ctl.c fill_record). */
export function build(policy, iss, d, now) {
  const recordId = d.recordId ?? newId();
  if (!idValid(recordId)) throw new RecordError('recordId', "not 1-64 of [A-Za-z0-9._-], or '.' or '..'");
  text('onBehalfOf', d.subject);
  need('action', d.action);
  if (d.action.includes('*')) throw new RecordError('action', "contains '*'");
  need('resource', d.resource);
  const why = resourceProblem(d.resource);
  if (why) throw new RecordError('resource', why);
  const params = d.parameters;
  if (params === null || typeof params !== 'object' || Array.isArray(params))
    throw new RecordError('parameters', 'not an object');
  text('basis', d.basis);
  const exp = toMs('expiresAt', d.expiresAt, now);
  const nbf = d.notBefore != null ? toMs('notBefore', d.notBefore, now) : 0;
  if (now <= 0 || exp <= 0 || nbf < 0) throw new RecordError('decidedAt', 'a time is before 1970');
  if (exp <= now) throw new RecordError('expiresAt', 'not later than decidedAt');
  if (exp - now > policy.maxWindowMs) throw new RecordError('expiresAt', 'more than max_window_s after decidedAt');
  if (nbf && nbf >= exp) throw new RecordError('notBefore', 'not before expiresAt');
  if (d.notify != null) utf8('notifyOnDenial', d.notify);
  if (iss == null) throw new RecordError('iss', 'missing: set [records] issuer or issuer');
  utf8('iss', iss);
  if (policy.issuer != null && iss !== policy.issuer) throw new RecordError('iss', 'not the configured issuer');
  const rec = { recordId, onBehalfOf: d.subject, action: d.action, resource: d.resource,
    parameters: params, basis: d.basis, decidedAt: fmtTime(now) };
  if (nbf) rec.notBefore = fmtTime(nbf);
  rec.expiresAt = fmtTime(exp);
  if (d.notify != null) rec.notifyOnDenial = d.notify;
  rec.iss = iss;
  if (d.audience != null) { // warrantd(7) §3.1: the deployment it is for
    utf8('aud', d.audience);
    rec.aud = d.audience;
  }
  if (policy.actions && !policy.actions.has(d.action))
    throw new UnknownActionError('action', `no [action ${d.action.slice(0, 64)}] configured`);
  return { rec, nbf };
}

// ---- JSON exactly as jansson's json_dumps(JSON_COMPACT) writes it ----
const ESC = { '"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
// eslint-disable-next-line no-control-regex
const NEEDS = /["\\\u0000-\u001f]/g;
const str = (s) => '"' + s.replace(NEEDS, (c) => ESC[c] ?? '\\u' + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')) + '"';

/** jansson's jsonp_dtostr: C's "%.17g", the exponent bare, ".0" when it reads as an integer. */
function jreal(v) {
  const [m, e] = v.toExponential(16).split('e');
  const exp = +e;
  const neg = m[0] === '-';
  const digits = m.replace('-', '').replace('.', '');
  let s;
  if (exp < -4 || exp >= 17) {
    let mant = digits[0] + '.' + digits.slice(1);
    mant = mant.replace(/0+$/, '').replace(/\.$/, '');
    s = mant + 'e' + (exp < 0 ? '-' : '') + String(Math.abs(exp)); // jansson: no '+', no leading 0
  } else {
    let int, frac;
    if (exp >= 0) { int = digits.slice(0, exp + 1); frac = digits.slice(exp + 1); }
    else { int = '0'; frac = '0'.repeat(-exp - 1) + digits; }
    frac = frac.replace(/0+$/, '');
    s = frac ? `${int}.${frac}` : int;
  }
  if (!/[.e]/.test(s)) s += '.0';
  return (neg ? '-' : '') + s;
}

export function dumps(v, field = 'parameters') {
  if (typeof v === 'string') { utf8(field, v); return str(v); }
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (v === null) return 'null';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new RecordError(field, 'not a finite number');
    return Number.isSafeInteger(v) ? String(v) : jreal(v);
  }
  if (Array.isArray(v)) return '[' + v.map((x) => dumps(x, field)).join(',') + ']';
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype || (typeof v === 'object' && Object.getPrototypeOf(v) === null))
    return '{' + Object.entries(v).map(([k, x]) => { utf8(field, k); return str(k) + ':' + dumps(x, field); }).join(',') + '}';
  throw new RecordError(field, `a ${typeof v} is not JSON`);
}

/** No number but safe integers anywhere: JSON.stringify then writes what jansson does. */
function plain(v) {
  if (typeof v === 'number') return Number.isSafeInteger(v) && !Object.is(v, -0);
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (Array.isArray(v)) return v.every(plain);
  if (typeof v === 'object' && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null))
    return Object.values(v).every(plain);
  return false;
}
const LOWER_U = /(\\\\)|\\u00([0-9a-f]{2})/g;

/** The payload's text as jansson writes it: JSON.stringify (its lower-case
 * \u00xx made upper case) unless a real or anything else needs dumps(). */
export function payloadText(rec) {
  if (!plain(rec.parameters)) return dumps(rec, 'record');
  let s = JSON.stringify(rec);
  if (/\\ud[89a-f]/.test(s)) return dumps(rec, 'record'); // a lone surrogate: refused there
  if (s.includes('\\u00')) s = s.replace(LOWER_U, (m, bs, hex) => bs || '\\u00' + hex.toUpperCase());
  return s;
}

// SPDX-License-Identifier: BSD-2-Clause
import assert from 'node:assert/strict';
import { createPublicKey, verify } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { build, dumps, fnv1a32, keygen, parseTime, Policy, RecordError, shardOf, Signer, UnknownActionError } from '../lib/index.js';

const DATA = new URL('../../../tests/data/', import.meta.url).pathname;
for (const n of ['test-es256.key', 'test-rs256.key', 'test-hs256.secret']) chmodSync(join(DATA, n), 0o600);
const NOW = parseTime('2026-12-07T16:00:00Z');
const POL = new Policy({ actions: ['gate.open'], issuer: 'd.test' });
const OK = { subject: 'operator:4417', action: 'gate.open', resource: 'gates/7', parameters: { duration_s: 30 }, basis: 'ticket:1', expiresAt: { in: 12 * 3600e3 } };
const rec = (o = {}) => build(POL, o.iss ?? 'd.test', { ...OK, ...o }, NOW);

test('FNV-1a vectors of the manual', () => {
  assert.equal(fnv1a32(Buffer.from('')), 0x811c9dc5);
  assert.equal(fnv1a32(Buffer.from('a')), 0xe40c292c);
  assert.equal(fnv1a32(Buffer.from('foobar')), 0xbf9cf968);
  assert.equal(shardOf('foobar', 6), 4);
  assert.equal(shardOf('foobar', 4), 0);
});

test('member order and times', () => {
  const { rec: r } = rec({ notBefore: { in: 3600e3 }, notify: 'ops', recordId: 'r1' });
  assert.deepEqual(Object.keys(r), ['recordId', 'onBehalfOf', 'action', 'resource', 'parameters', 'basis', 'decidedAt', 'notBefore', 'expiresAt', 'notifyOnDenial', 'iss']);
  assert.equal(r.expiresAt, '2026-12-08T04:00:00.000Z');
});

const bad = [
  ['recordId', { recordId: '..' }], ['recordId', { recordId: 'x'.repeat(65) }], ['onBehalfOf', { subject: '' }],
  ['onBehalfOf', { subject: 'a\u007fb' }], ['onBehalfOf', { subject: 'é'.repeat(513) }], ['action', { action: 'a*' }],
  ['resource', { resource: 'a/../b' }], ['resource', { resource: 'a//b' }], ['resource', { resource: 'a\\b' }],
  ['resource', { resource: '*' }], ['parameters', { parameters: [] }], ['parameters', { parameters: null }],
  ['basis', { basis: 'x\ty' }], ['expiresAt', { expiresAt: { in: 0 } }], ['expiresAt', { expiresAt: { in: 7 * 86400e3 + 1 } }],
  ['expiresAt', { expiresAt: '2026-12-08 04:00' }], ['notBefore', { notBefore: { in: 12 * 3600e3 } }], ['iss', { iss: 'x' }],
  ['onBehalfOf', { subject: '\ud800' }],
];
for (const [field, o] of bad)
  test(`refuses ${JSON.stringify(o)} naming ${field}`, () => {
    assert.throws(() => rec(o), (e) => e instanceof RecordError && e.field === field && e.code === 'record-invalid');
  });

test('unknown action, last', () => {
  assert.throws(() => rec({ action: 'gate.close' }), (e) => e instanceof UnknownActionError && e.code === 'unknown-action');
  assert.throws(() => rec({ action: 'gate.close', resource: '..' }), (e) => !(e instanceof UnknownActionError));
});

test('JSON as jansson writes it', () => {
  assert.equal(dumps({ a: 'x\u0001\u001f\u007f"\\/é', n: -3, f: 0.1, g: 1e300, h: 1.5e-7, b: [true, false, null], o: {} }),
    '{"a":"x\\u0001\\u001F\u007f\\"\\\\/é","n":-3,"f":0.10000000000000001,"g":1.0000000000000001e300,"h":1.4999999999999999e-7,"b":[true,false,null],"o":{}}');
  assert.throws(() => dumps({ x: NaN }), RecordError);
});

test('ES256 signs R||S that verifies', () => {
  const s = Signer.fromFile('ES256', join(DATA, 'test-es256.key'), 'k1');
  const [h, p, sig] = s.sign(Buffer.from('{"a":1}')).split('.');
  assert.deepEqual(JSON.parse(Buffer.from(h, 'base64url')), { alg: 'ES256', typ: 'decision+jwt', kid: 'k1' });
  const pub = createPublicKey(readFileSync(join(DATA, 'test-es256.pub')));
  assert.ok(verify('sha256', Buffer.from(`${h}.${p}`), { key: pub, dsaEncoding: 'ieee-p1363' }, Buffer.from(sig, 'base64url')));
  assert.throws(() => Signer.fromFile('ES256', join(DATA, 'test-rs256.key')));
  assert.throws(() => Signer.fromFile('HS256', join(DATA, 'test-es256.key')));
  Signer.fromFile('RS256', join(DATA, 'test-rs256.key'));
  Signer.fromFile('HS256', join(DATA, 'test-hs256.secret'));
});

test('keygen: 0600 key, JWKS with kid', async () => {
  const d = mkdtempSync(join(tmpdir(), 'wk-'));
  await keygen(join(d, 'k'), 'ES256', 'k7');
  assert.equal(statSync(join(d, 'k.key')).mode & 0o777, 0o600);
  const jwk = JSON.parse(readFileSync(join(d, 'k.jwks.json'))).keys[0];
  assert.equal(jwk.kid, 'k7');
  assert.equal(jwk.d, undefined);
  assert.equal(Signer.fromFile('ES256', join(d, 'k.key'), 'k7').kid, 'k7');
  await assert.rejects(keygen(join(d, 'k'), 'ES256', 'k7'));
  await keygen(join(d, 'h'), 'HS256');
  Signer.fromFile('HS256', join(d, 'h.secret'));
});

test('the JSON.stringify path writes what dumps writes', async () => {
  const { payloadText } = await import('../lib/record.js');
  for (const parameters of [{ a: 'x\u0001\u001f\\u00ab\\\u0002', é: ['\n', { k: null, n: 3 }], t: true }, { f: 0.5 }, { n: -0 }, { b: 2n ** 70n }]) {
    const { rec: r } = rec({ parameters });
    assert.equal(payloadText(r), dumps(r, 'record'));
  }
  const { rec: r } = rec({ parameters: { s: '\udc00' } });
  assert.throws(() => payloadText(r), RecordError);
});

test('audience sets aud, last (warrantd(7) §3.1)', async () => {
  const { rec: r } = build(POL, 'd.test', { ...OK, audience: 'canal-prod' }, NOW);
  assert.deepEqual(Object.keys(r).slice(-2), ['iss', 'aud']);
  assert.equal(r.aud, 'canal-prod');
  assert.equal('aud' in rec().rec, false);
  assert.throws(() => build(POL, 'd.test', { ...OK, audience: 7 }, NOW), (e) => e instanceof RecordError && e.field === 'aud');
  const { Decider, ConfigError } = await import('../lib/index.js');
  const settings = { signature: false, issuer: 'd.test', audience: 'canal-prod', actions: ['gate.open'] };
  const d = new Decider({ settings, clock: () => NOW });
  assert.ok(d.prepare({ ...OK }).text.endsWith('"iss":"d.test","aud":"canal-prod"}'));
  assert.throws(() => d.prepare({ ...OK, audience: 'canal-test' }), RecordError);
  assert.throws(() => new Decider({ settings, audience: 'canal-test' }), ConfigError);
  const d2 = new Decider({ settings: { ...settings, audience: null }, audience: 'canal-dev', clock: () => NOW });
  assert.ok(d2.prepare({ ...OK }).text.endsWith('"aud":"canal-dev"}'));
});

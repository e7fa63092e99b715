// SPDX-License-Identifier: BSD-2-Clause
// Decider: writes records as warrantd(7) §2-§3 and `warrantctl decide` do.
// A record is checked (build), signed (Signer), then its hash and queue
// entry are written together with plain commands under MULTI/EXEC, in the
// record's shard (FNV-1a-32 of the id mod [redis] shards).
import { readFileSync } from 'node:fs';
import Redis from 'ioredis';
import { loadConfig, Settings } from './config.js';
import { Guard } from './hosts.js';
import { Signer } from './jws.js';
import {
  build, checkTraceparent, ConfigError, fmtTime, payloadText, NotPermittedError, Policy, RecordError,
  RecordExistsError, TERMINAL, WaitTimeout,
} from './record.js';

export * from './record.js';
export { loadConfig, parseIni, Settings } from './config.js';
export { loadSigningKey, payloadOf, Signer } from './jws.js';
export { keygen } from './keygen.js';

/** FNV-1a, 32 bits (warrantd(7) §2). */
export function fnv1a32(buf) {
  let h = 0x811c9dc5;
  for (const b of buf) h = Math.imul(h ^ b, 16777619) >>> 0;
  return h >>> 0;
}
export const shardOf = (id, shards) => (shards ? fnv1a32(Buffer.from(id, 'utf8')) % shards : 0);

export function keysOf(prefix, shard, shards) {
  const p = shards ? `{${prefix}:${shard}}` : prefix;
  return { jobs: `${p}:jobs`, scheduled: `${p}:scheduled`, decision: `${p}:decision:` };
}

export class Decider {
  /**
   * @param {object} o  config (a warrantd.ini path) or settings; keyFile and
   *   kid, or signer; issuer; audience (the record's aud, warrantd(7) §3.1);
   *   clock () => ms; redis (a ready ioredis client)
   */
  constructor(o = {}) {
    const s = o.settings instanceof Settings ? o.settings : o.settings ? new Settings(o.settings)
      : o.config ? loadConfig(o.config) : new Settings();
    this.s = s;
    if (o.issuer != null && s.issuer != null && o.issuer !== s.issuer) throw new ConfigError('issuer differs from [records] issuer');
    this.issuer = s.issuer ?? o.issuer ?? null;
    if (o.audience != null && s.audience != null && o.audience !== s.audience) throw new ConfigError('audience differs from [records] audience');
    this.audience = s.audience ?? o.audience ?? null;
    this.policy = new Policy({ maxWindowS: s.maxWindowS, clockSkewS: s.clockSkewS, maxBytes: s.maxBytes, issuer: s.issuer, actions: s.actions });
    this.clock = o.clock ?? Date.now;
    this.signer = o.signer ?? null;
    if (s.signature && !this.signer) {
      if (!o.keyFile) throw new ConfigError('keyFile is required with [records] signature = required');
      this.signer = Signer.fromFile(s.algorithm, s.path(o.keyFile), o.kid ?? null);
    }
    if (this.signer && this.signer.alg !== s.algorithm) throw new ConfigError(`the key is ${this.signer.alg}, [records] algorithm ${s.algorithm}`);
    this.keys = Array.from({ length: Math.max(s.shards, 1) }, (_, i) => keysOf(s.prefix, i, s.shards));
    this._redis = o.redis ?? null;
    this._watch = null; // the connection of explicit ids' WATCH, one at a time
    this._watchChain = Promise.resolve();
    this._monitor = null;
  }

  /** Sign from now on with another key (warrantd(7) §3.2). */
  rotate(keyFile, kid) { this.signer = Signer.fromFile(this.s.algorithm, this.s.path(keyFile), kid); }

  _connect(username, password) {
    const s = this.s;
    // autoResendUnfulfilledCommands off: after a reconnect no HSET or XADD of
    // a transaction whose MULTI the old connection took is sent again on its own
    const opts = { username: username ?? undefined, password: password ?? undefined, db: s.db, maxRetriesPerRequest: 2, autoResendUnfulfilledCommands: false };
    if (s.tls) {
      // [redis] tls and its files; the server's certificate checked against tls_ca_file, else the system's CAs
      const f = (n) => (n ? readFileSync(s.path(n)) : undefined);
      opts.tls = { ca: f(s.tlsCaFile), cert: f(s.tlsCertFile), key: f(s.tlsKeyFile), servername: s.tlsServerName ?? undefined, rejectUnauthorized: true };
    }
    if (s.socket) return new Redis({ ...opts, path: s.socket });
    // issue 37 items 1, 2 (warrantd(7) §10): every host:port checked against
    // [redis] allow_hosts (unset: the configured host:port, the seeds and what
    // a seed announces) and the clear-text rule before its socket is opened
    const seeds = s.cluster ? s.cluster.map((n) => [n.host, n.port]) : [[s.host, s.port]];
    const guard = new Guard(s.allowHosts, seeds, !!s.tls, s.allowPlaintext, password != null);
    for (const [h, p] of seeds) guard.check(h, p);
    guard.opts = { ...opts };
    opts.Connector = guard.connector();
    if (s.cluster) return new Redis.Cluster(s.cluster, { redisOptions: opts });
    return new Redis({ ...opts, host: s.host, port: s.port });
  }
  get redis() {
    if (!this._redis) this._redis = this._connect(this.s.username, this.s.passwordText());
    return this._redis;
  }
  _reader() {
    if (this.s.monitorUsername == null) return this.redis;
    this._monitor ??= this._connect(this.s.monitorUsername, this.s.passwordText(this.s.monitorPasswordFile));
    return this._monitor;
  }
  async close() {
    for (const c of [this._redis, this._watch, this._monitor]) if (c) await c.quit().catch(() => c.disconnect());
    this._redis = this._watch = this._monitor = null;
  }

  /** The checked and signed record, nothing written. */
  prepare(d) {
    const now = this.clock();
    let iss = this.issuer;
    if (d.issuer != null) {
      if (iss != null && d.issuer !== iss) throw new RecordError('iss', 'differs from [records] issuer');
      iss = d.issuer;
    }
    let aud = this.audience;
    if (d.audience != null) {
      if (aud != null && d.audience !== aud) throw new RecordError('aud', 'differs from [records] audience');
      aud = d.audience;
    }
    const { rec, nbf } = build(this.policy, iss, { ...d, audience: aud }, now);
    let tp = null;
    if (d.traceparent != null) {
      tp = '00' + checkTraceparent(d.traceparent).slice(2);
      if (nbf > now) throw new RecordError('traceparent', 'goes into the stream entry: not with a notBefore in the future (P:scheduled holds ids only)');
    }
    const payload = Buffer.from(payloadText(rec), 'utf8');
    const text = this.s.signature ? this.signer.sign(payload) : payload.toString('utf8');
    if (this.policy.maxBytes > 0 && Buffer.byteLength(text) > this.policy.maxBytes)
      throw new RecordError('record', `longer than [records] max_bytes (${this.policy.maxBytes})`);
    const id = rec.recordId;
    return { id, shard: shardOf(id, this.s.shards), text, createdAt: fmtTime(now), score: nbf > now ? nbf : null, traceparent: tp };
  }

  static _queue(m, k, p) {
    m.hset(k.decision + p.id, 'record', p.text, 'state', 'queued', 'createdAt', p.createdAt);
    if (p.score != null) m.zadd(k.scheduled, String(p.score), p.id);
    else if (p.traceparent) m.xadd(k.jobs, '*', 'id', p.id, 'traceparent', p.traceparent);
    else m.xadd(k.jobs, '*', 'id', p.id);
  }

  /** The queueing commands as plain calls (ioredis' multi() costs twice the signature). */
  static _calls(c, k, p) {
    const out = [c.call('HSET', k.decision + p.id, 'record', p.text, 'state', 'queued', 'createdAt', p.createdAt)];
    if (p.score != null) out.push(c.call('ZADD', k.scheduled, String(p.score), p.id));
    else if (p.traceparent) out.push(c.call('XADD', k.jobs, '*', 'id', p.id, 'traceparent', p.traceparent));
    else out.push(c.call('XADD', k.jobs, '*', 'id', p.id));
    return out;
  }

  /**
   * MULTI, the commands, EXEC as plain calls on the one connection, which
   * ioredis sends in order: written in the same tick, no other call comes in
   * between. Every reply is awaited; the first error is thrown.
   */
  async _transact(items) {
    const c = this.redis;
    const all = [c.call('MULTI')];
    for (const p of items) all.push(...Decider._calls(c, this.keys[p.shard], p));
    all.push(c.call('EXEC'));
    const res = await Promise.all(all);
    const bad = res[res.length - 1].find((x) => x instanceof Error);
    if (bad) throw bad;
  }

  static _check(res) {
    if (res === null) return false; // EXEC aborted by WATCH
    for (const [err] of res) if (err) throw err;
    return true;
  }

  /**
   * Write one record; resolves to its recordId. Rejects with RecordError
   * (naming the field) for what the worker would refuse, RecordExistsError
   * for an id already used.
   */
  async decide(subject, action, resource, parameters, basis, expiresAt, o = {}) {
    const p = this.prepare({ subject, action, resource, parameters, basis, expiresAt, notBefore: o.notBefore, notify: o.notify, recordId: o.recordId, traceparent: o.traceparent, issuer: o.issuer, audience: o.audience });
    const k = this.keys[p.shard];
    if (o.recordId == null && !this.s.cluster) {
      // a fresh random id (130 bits): nothing to check
      await this._transact([p]);
      return p.id;
    }
    if (o.recordId == null) {
      const m = this.redis.multi();
      Decider._queue(m, k, p);
      Decider._check(await m.exec());
      return p.id;
    }
    // the caller's id must not exist: WATCH on a connection of its own,
    // so that no other transaction's EXEC clears the watch in between
    const run = async () => {
      this._watch ??= this.s.cluster ? this._connect(this.s.username, this.s.passwordText())
        : this.redis.duplicate();
      const c = this._watch, h = k.decision + p.id;
      await c.watch(h);
      if (await c.exists(h)) { await c.unwatch(); throw new RecordExistsError(p.id); }
      const m = c.multi();
      Decider._queue(m, k, p);
      if (!Decider._check(await m.exec())) throw new RecordExistsError(p.id);
      return p.id;
    };
    const r = this._watchChain.then(run, run);
    this._watchChain = r.catch(() => {});
    return r;
  }

  /** Many records (objects of decide's arguments, no recordId) in one MULTI/EXEC per shard. */
  async decideMany(list) {
    const prepared = list.map((d) => {
      if (d.recordId != null) throw new RecordError('recordId', 'decideMany generates the ids: use decide()');
      return this.prepare(d);
    });
    const by = new Map();
    for (const p of prepared) {
      const g = this.s.cluster ? p.shard : 0;
      if (!by.has(g)) by.set(g, []);
      by.get(g).push(p);
    }
    await Promise.all([...by.values()].map(async (ps) => {
      if (!this.s.cluster) return this._transact(ps);
      const m = this.redis.multi();
      for (const p of ps) Decider._queue(m, this.keys[p.shard], p);
      Decider._check(await m.exec());
    }));
    return prepared.map((p) => p.id);
  }

  /** The record's hash without the record (state, outcome, detail...), or null. */
  async status(recordId) {
    const k = this.keys[shardOf(recordId, this.s.shards)];
    const h = await this._reader().hgetall(k.decision + recordId);
    if (!h || Object.keys(h).length === 0) return null;
    delete h.record;
    return h;
  }

  /** Resolves with the status once terminal; WaitTimeout after timeoutMs. */
  async wait(recordId, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    let pause = 5;
    for (;;) {
      const st = await this.status(recordId);
      if (st && TERMINAL.has(st.state)) return st;
      const left = deadline - Date.now();
      if (left <= 0) throw new WaitTimeout(recordId, st);
      await new Promise((res) => setTimeout(res, Math.min(pause, left)));
      pause = Math.min(pause * 2, 250);
    }
  }

  async cancel() { throw new NotPermittedError("cancel is the operator's (warrantd(7) §11): `warrantctl cancel`; the decider's ACL user may not"); }
  async retry() { throw new NotPermittedError("retry is the operator's (warrantd(7) §11): `warrantctl retry`; the decider's ACL user may not"); }
}

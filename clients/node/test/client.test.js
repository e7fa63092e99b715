// SPDX-License-Identifier: BSD-2-Clause
// Decider against a private redis-server on a unix socket (started and
// stopped by PID).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import Redis from 'ioredis';
import { Decider, NotPermittedError, parseTime, payloadOf, RecordError, RecordExistsError, shardOf, WaitTimeout } from '../lib/index.js';

const KEY = new URL('../../../tests/data/test-es256.key', import.meta.url).pathname;
const NOW = parseTime('2026-12-07T16:00:00Z');
const dir = mkdtempSync(join(tmpdir(), 'warrant-node-'));
const sock = join(dir, 'redis.sock');
let server, r;
const ARGS = ['operator:4417', 'gate.open', 'gates/7', { duration_s: 30 }, 'ticket:1', { in: 3600e3 }];
const decider = (s = {}, clock = () => NOW) => new Decider({ settings: { socket: sock, issuer: 'd.test', actions: ['gate.open'], ...s }, keyFile: KEY, kid: 'k1', clock });

before(async () => {
  server = spawn('redis-server', ['--port', '0', '--unixsocket', sock, '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const deadline = Date.now() + 10000;
  for (;;) {
    const c = new Redis({ path: sock, lazyConnect: true, retryStrategy: null, maxRetriesPerRequest: 0 });
    c.on('error', () => {});
    try { await c.connect(); await c.ping(); r = c; break; } catch { c.disconnect(); }
    if (Date.now() > deadline) throw new Error('redis-server did not start');
    await new Promise((res) => setTimeout(res, 10));
  }
});
after(async () => { r.disconnect(); server.kill('SIGTERM'); await new Promise((res) => server.once('exit', res)); rmSync(dir, { recursive: true, force: true }); });
beforeEach(async () => { await r.flushall(); });

test('writes hash and entry', async () => {
  const d = decider();
  const id = await d.decide(...ARGS);
  const h = await r.hgetall(`warrant:decision:${id}`);
  assert.equal(h.state, 'queued');
  assert.equal(h.createdAt, '2026-12-07T16:00:00.000Z');
  assert.ok(payloadOf(h.record).toString().startsWith(`{"recordId":"${id}",`));
  const [[, fields]] = await r.xrange('warrant:jobs', '-', '+');
  assert.deepEqual(fields, ['id', id]);
  assert.deepEqual(await d.status(id), { state: 'queued', createdAt: '2026-12-07T16:00:00.000Z' });
  assert.equal(await d.status('nope'), null);
  await d.close();
});

test('scheduled, traceparent', async () => {
  const d = decider({}, () => parseTime('2099-01-01T00:00:00Z'));
  const id = await d.decide(...ARGS.slice(0, 5), { in: 7200e3 }, { notBefore: { in: 3600e3 } });
  assert.equal(Number(await r.zscore('warrant:scheduled', id)), parseTime('2099-01-01T01:00:00Z'));
  const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const id2 = await d.decide(...ARGS, { traceparent: tp });
  const [[, f]] = await r.xrange('warrant:jobs', '-', '+');
  assert.deepEqual(f, ['id', id2, 'traceparent', tp]);
  await assert.rejects(d.decide(...ARGS.slice(0, 5), { in: 7200e3 }, { notBefore: { in: 3600e3 }, traceparent: tp }), (e) => e.field === 'traceparent');
  await d.close();
});

test('a record id is never reused, even racing', async () => {
  const d = decider();
  const res = await Promise.allSettled([1, 2, 3, 4].map(() => d.decide(...ARGS, { recordId: 'chg-1' })));
  assert.equal(res.filter((x) => x.status === 'fulfilled').length, 1);
  assert.ok(res.filter((x) => x.status === 'rejected').every((x) => x.reason instanceof RecordExistsError));
  assert.equal(await r.xlen('warrant:jobs'), 1);
  await d.close();
});

test('refused input writes nothing; shards; decideMany', async () => {
  const d = decider({ shards: 2 });
  await assert.rejects(d.decide('op', 'gate.open', 'gates/../x', {}, 'b', { in: 1000 }), RecordError);
  assert.equal(await r.dbsize(), 0);
  const ids = await d.decideMany(Array.from({ length: 30 }, (_, i) => ({ subject: 's', action: 'gate.open', resource: `g/${i}`, parameters: {}, basis: 'b', expiresAt: { in: 1000 } })));
  for (const id of ids) assert.equal(await r.exists(`{warrant:${shardOf(id, 2)}}:decision:${id}`), 1);
  const n0 = await r.xlen('{warrant:0}:jobs'), n1 = await r.xlen('{warrant:1}:jobs');
  assert.equal(n0 + n1, 30);
  assert.ok(n0 > 0 && n1 > 0);
  await d.close();
});

test('wait, cancel', async () => {
  const d = decider();
  const id = await d.decide(...ARGS);
  await assert.rejects(d.wait(id, 30), (e) => e instanceof WaitTimeout && e.status.state === 'queued');
  await r.hset(`warrant:decision:${id}`, 'state', 'done');
  assert.equal((await d.wait(id, 5000)).state, 'done');
  await assert.rejects(d.cancel(id), NotPermittedError);
  await assert.rejects(d.retry(id), NotPermittedError);
  await d.close();
});

test('an error reply: nothing written, the connection in step', async () => {
  await r.call('ACL', 'SETUSER', 'weak', 'on', '>pw', '~*', '+multi', '+exec', '+hset', '+hgetall', '+ping');
  const d = decider({ username: 'weak', password: 'pw' });
  for (let i = 0; i < 3; i++) await assert.rejects(d.decide(...ARGS));
  assert.equal(await r.dbsize(), 0);
  await r.call('ACL', 'SETUSER', 'weak', '+xadd');
  const id = await d.decide(...ARGS);
  assert.equal(await r.hget(`warrant:decision:${id}`, 'state'), 'queued');
  await d.close();
});

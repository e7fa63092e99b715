// SPDX-License-Identifier: BSD-2-Clause
// [redis] cluster: a one-node Redis Cluster owning every slot, on a free TCP
// port (tried on another if that one is taken), started and stopped by PID;
// it announces 127.0.0.1, as a real node its address (ioredis cannot use "").
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Redis from 'ioredis';
import { Decider, RecordExistsError, shardOf } from '../lib/index.js';

const KEY = new URL('../../../tests/data/test-es256.key', import.meta.url).pathname;
let server, port, dir;
const freePort = () => new Promise((res) => { const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

async function start() {
  port = await freePort();
  if (port > 55535) return false;
  dir = mkdtempSync(join(tmpdir(), 'warrant-ncl-'));
  server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-announce-ip', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  let exited = false;
  server.once('exit', () => { exited = true; });
  const deadline = Date.now() + 10000;
  while (!exited && Date.now() < deadline) {
    const c = new Redis({ port, lazyConnect: true, retryStrategy: null, maxRetriesPerRequest: 0 });
    c.on('error', () => {});
    try {
      await c.connect();
      await c.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
      while (!(await c.call('CLUSTER', 'INFO')).includes('cluster_state:ok')) await sleep(10);
      c.disconnect();
      return true;
    } catch { c.disconnect(); await sleep(10); }
  }
  rmSync(dir, { recursive: true, force: true });
  return false;
}

before(async () => { for (let i = 0; i < 5; i++) if (await start()) return; throw new Error('no cluster node'); });
after(async () => { server.kill('SIGTERM'); await new Promise((res) => server.once('exit', res)); rmSync(dir, { recursive: true, force: true }); });

test('each shard on the node owning its slot', async () => {
  const d = new Decider({ settings: { cluster: [{ host: '127.0.0.1', port }], shards: 3, issuer: 'd' }, keyFile: KEY });
  const ids = [];
  for (let i = 0; i < 12; i++) ids.push(await d.decide('s', 'gate.open', 'g/1', {}, 'b', { in: 3600e3 }));
  ids.push(await d.decide('s', 'gate.open', 'g/1', {}, 'b', { in: 3600e3 }, { recordId: 'cl-1' }));
  await assert.rejects(d.decide('s', 'gate.open', 'g/1', {}, 'b', { in: 3600e3 }, { recordId: 'cl-1' }), RecordExistsError);
  ids.push(...await d.decideMany(Array(6).fill({ subject: 's', action: 'gate.open', resource: 'g', parameters: {}, basis: 'b', expiresAt: { in: 3600e3 } })));
  const r = new Redis({ port });
  for (const id of ids) assert.equal(await r.hget(`{warrant:${shardOf(id, 3)}}:decision:${id}`, 'state'), 'queued');
  let n = 0;
  for (let s = 0; s < 3; s++) n += await r.xlen(`{warrant:${s}}:jobs`);
  assert.equal(n, ids.length);
  assert.equal((await d.status(ids[0])).state, 'queued');
  r.disconnect();
  await d.close();
});

// issue 37 item 2: the seed by name ("localhost"), the node announcing
// 127.0.0.1: under the default allow_hosts that address is admitted because
// the seed announces it (CLUSTER SHARDS, asked by the library's Connector).
test('the default admits what the seed announces', async () => {
  const d = new Decider({ settings: { cluster: [{ host: 'localhost', port }], shards: 3, issuer: 'd' }, keyFile: KEY });
  const late = new Promise((_, rej) => setTimeout(() => rej(new Error('no answer in 15 s')), 15000).unref());
  assert.ok(await Promise.race([d.decide('s', 'gate.open', 'g/1', {}, 'b', { in: 3600e3 }), late]));
  await d.close();
});

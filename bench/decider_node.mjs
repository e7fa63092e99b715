// SPDX-License-Identifier: BSD-2-Clause
// The Node decider library's throughput with ES256 (bench/clients.sh).
//   node decider_node.mjs SOCKET N -> one line per mode
// Modes: sign (prepare only), decide at 1 and 64 in flight (generated ids,
// one MULTI/EXEC each, ioredis pipelining them), decide-id (a caller's id:
// WATCH, EXISTS, MULTI/EXEC, one at a time), decideMany (batches of 100).
import { chmodSync } from 'node:fs';
import { Decider } from '../clients/node/lib/index.js';

const [sock, nArg] = process.argv.slice(2);
const n = Number(nArg);
const key = new URL('../tests/data/test-es256.key', import.meta.url).pathname;
chmodSync(key, 0o600);
const d = new Decider({ settings: { socket: sock, issuer: 'bench', actions: ['gate.open'] }, keyFile: key, kid: 'k1' });
const a = { subject: 'operator:4417', action: 'gate.open', resource: 'gates/7', parameters: { duration_s: 30 }, basis: 'ticket:CHG-1182', expiresAt: { in: 12 * 3600e3 } };
const call = (o = {}) => d.decide(a.subject, a.action, a.resource, a.parameters, a.basis, a.expiresAt, o);

async function redisCpu() {
  const info = await d.redis.info('cpu');
  const get = (k) => Number(new RegExp(`${k}:([0-9.]+)`).exec(info)[1]);
  return get('used_cpu_user') + get('used_cpu_sys');
}
// Wall time, and the CPU time of this process and of redis-server: on a
// shared machine the CPU figures say what the library costs.
async function run(mode, f, count) {
  await d.redis.flushall();
  const r0 = await redisCpu(), c0 = process.cpuUsage(), t = process.hrtime.bigint();
  await f(count);
  const s = Number(process.hrtime.bigint() - t) / 1e9;
  const cu = process.cpuUsage(c0), c = (cu.user + cu.system) / 1e6, r = (await redisCpu()) - r0;
  const f0 = (x) => Math.round(x).toLocaleString('en');
  console.log(`node   ${mode.padEnd(12)} ${f0(count / s).padStart(8)} records/s wall  ${(c / count * 1e6).toFixed(1).padStart(6)} us client CPU  ${(r / count * 1e6).toFixed(1).padStart(5)} us redis CPU  (${f0(count / c)} records per client CPU-second)`);
}
async function inFlight(count, k, mk) {
  let next = 0;
  await Promise.all(Array.from({ length: k }, async () => { while (next < count) { const i = next++; await mk(i); } }));
}

await run('sign', async (c) => { for (let i = 0; i < c; i++) d.prepare(a); }, n);
await run('decide-1', (c) => inFlight(c, 1, () => call()), n);
await run('decide-64', (c) => inFlight(c, 64, () => call()), n);
await run('decide-id', (c) => inFlight(c, 1, (i) => call({ recordId: `id-${i}` })), n);
await run('decideMany', (c) => inFlight(c / 100, 4, () => d.decideMany(Array(100).fill(a))), n);
await d.close();

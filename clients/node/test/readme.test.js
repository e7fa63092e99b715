// SPDX-License-Identifier: BSD-2-Clause
// The JavaScript examples of README.md and of this package's README run as
// written against a private redis-server; only the INI path changes.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

const ROOT = new URL('../../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'warrant-readme-'));
const sock = join(dir, 'redis.sock');
let server;

before(async () => {
  server = spawn('redis-server', ['--port', '0', '--unixsocket', sock, '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const deadline = Date.now() + 10000;
  while (spawnSync('redis-cli', ['-s', sock, 'ping']).stdout?.toString().trim() !== 'PONG') {
    if (Date.now() > deadline) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 20));
  }
  copyFileSync(join(ROOT, 'tests/data/test-es256.key'), join(dir, 'decider.key'));
  chmodSync(join(dir, 'decider.key'), 0o600);
  writeFileSync(join(dir, 'warrantd.ini'), `[redis]\nsocket = ${sock}\n[redis.monitor]\nusername = default\n[records]\nissuer = d.test\n[action gate.open]\nurl = http://x/{resource}\n`);
});
after(async () => { server.kill('SIGTERM'); await new Promise((r) => server.once('exit', r)); rmSync(dir, { recursive: true, force: true }); });

for (const file of ['README.md', 'clients/node/README.md'])
  test(`the example of ${file} runs`, () => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const block = [...text.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.includes('new Decider('));
    assert.ok(block, `no example in ${file}`);
    let src = block.replaceAll('/etc/warrantd/warrantd.ini', join(dir, 'warrantd.ini'))
      .replace('console.log(await d.wait(id, 3600e3));', ''); // no worker here
    src += '\nconsole.log(typeof rid !== "undefined" ? rid : id);\n';
    // run inside the package, so that 'warrant-decider' resolves to itself
    const r = spawnSync('node', ['--input-type=module', '-e', src], { cwd: join(ROOT, 'clients/node'), encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const id = r.stdout.trim().split('\n').pop();
    const st = spawnSync('redis-cli', ['-s', sock, 'hget', `warrant:decision:${id}`, 'state']).stdout.toString().trim();
    assert.equal(st, 'queued');
  });

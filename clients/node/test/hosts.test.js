// SPDX-License-Identifier: BSD-2-Clause
// [redis] allow_hosts and the clear-text rule (issue 37 items 1, 2): the
// shared cases of tests/data/allow_hosts.json, and a refusal made before
// any TCP connection is opened.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net, { createServer } from 'node:net';
import { test } from 'node:test';
import { Decider } from '../lib/index.js';
import { AllowList, cleartextOk } from '../lib/hosts.js';
import { ConfigError } from '../lib/record.js';

const KEY = new URL('../../../tests/data/test-es256.key', import.meta.url).pathname;
const V = JSON.parse(readFileSync(new URL('../../../tests/data/allow_hosts.json', import.meta.url), 'utf8'));
const ARGS = ['operator:4417', 'gate.open', 'gates/7', { duration_s: 30 }, 'ticket:1', { in: 3600e3 }];
const decider = (s) => new Decider({ settings: { issuer: 'd.test', actions: ['gate.open'], ...s }, keyFile: KEY, kid: 'k1' });

test('the shared cases of tests/data/allow_hosts.json', () => {
  let n = 0;
  for (const m of V.match) {
    const a = AllowList.parse(m.list);
    for (const [h, p, want] of m.cases) { assert.equal(a.match(h, p), want, `${m.list}: ${h} ${p}`); n++; }
  }
  for (const bad of V.invalid) { assert.throws(() => AllowList.parse(bad), ConfigError, bad); n++; }
  for (const d of V.default) {
    const a = AllowList.exact(d.hosts);
    for (const [h, p, want] of d.cases) { assert.equal(a.match(h, p), want, `default: ${h} ${p}`); n++; }
  }
  for (const [h, unix, tls, plain, want] of V.cleartext) { assert.equal(cleartextOk(h, unix, tls, plain), want, h); n++; }
  assert.ok(n > 80);
});

test('a host:port allow_hosts does not admit: refused, the listener never sees a connection', async () => {
  let seen = 0;
  const srv = createServer((c) => { seen++; c.destroy(); });
  await new Promise((res) => srv.listen(0, '127.0.0.1', res));
  const port = srv.address().port;
  const d = decider({ host: '127.0.0.1', port, allowHosts: `127.0.0.1:${port + 1}` });
  await assert.rejects(d.decide(...ARGS), (e) => e instanceof ConfigError && /allow_hosts/.test(e.message));
  await new Promise((res) => setTimeout(res, 50));
  assert.equal(seen, 0);
  await d.close();
  await new Promise((res) => srv.close(res));
});

test('a password to a host beyond loopback without TLS: refused before a socket is opened', async () => {
  const orig = net.createConnection;
  let tried = 0;
  net.createConnection = (...a) => { tried++; return orig(...a); };
  try {
    const d = decider({ host: '10.9.8.7', port: 6379, password: 's3cret' });
    await assert.rejects(d.decide(...ARGS), (e) => e instanceof ConfigError && /clear text/.test(e.message));
    assert.equal(tried, 0);
    await d.close();
  } finally { net.createConnection = orig; }
});

test('allow_hosts and allow_plaintext from the file', async () => {
  const { Settings } = await import('../lib/config.js');
  const s = new Settings({ allowHosts: '10.0.0.0/24:6379', allowPlaintext: true });
  assert.ok(s.allowHosts.match('10.0.0.9', 6379) && !s.allowHosts.match('10.0.0.9', 6380));
  assert.throws(() => new Settings({ allowHosts: '10.0.0.0/33' }), ConfigError);
});

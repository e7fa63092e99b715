// SPDX-License-Identifier: BSD-2-Clause
// warrantd-web in a real browser (issue 39): Debian's chromium, headless,
// driven by puppeteer-core (pinned in package-lock.json; it downloads no
// browser). A private redis-server on a unix socket with the monitor user
// of conf/redis-acl.conf, the fake target, a real warrantd working a few
// jobs, warrantd-web on a loopback port of its own.
//
//   make test-web   (npm ci here, then node --test this file)
//
// Screenshots go to build/web-shots/. Everything listens on 127.0.0.1 or a
// unix socket in a temp dir; every process is stopped by its PID.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import puppeteer from 'puppeteer-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const bin = process.env.WARRANTD_BIN_DIR ?? path.join(root, 'build/release/bin');
const testBin = process.env.WARRANTD_TEST_DIR ?? path.join(root, 'build/release/tests');
const shots = process.env.WEB_SHOTS_DIR ?? path.join(root, 'build/web-shots');
const data = path.join(root, 'tests/data');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'warrantd-web-'));
const children = [];
const USER = 'operator';
const PASSWORD = 'a long test password 1';
const TRACE = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

async function waitFor(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (logs in ${tmp})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// The console's footprint, for the issue's closing note: VmRSS (kB) and CPU
// time (ms, user + system) of a process, from /proc.
function footprint(pid) {
  const rss = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const tick = 100;	// USER_HZ on Linux
  return { rssKb: rss, cpuMs: (Number(f[11]) + Number(f[12])) * 1000 / tick };
}

function start(name, file, args) {
  const log = fs.openSync(path.join(tmp, `${name}.log`), 'w');
  const p = spawn(file, args, { stdio: ['ignore', log, log] });
  children.push(p);
  return p;
}

const sock = path.join(tmp, 'redis.sock');
const ini = path.join(tmp, 'warrantd.ini');
const redisCli = (...a) => execFileSync('redis-cli', ['-s', sock, ...a], { encoding: 'utf8' }).trim();
const ctl = (...a) => execFileSync(path.join(bin, 'warrantctl'), ['-c', ini, ...a], { encoding: 'utf8' });
let base, browser, page, web;
const consoleErrors = [];

function decide(id, action, resource, extra = []) {
  return ctl('decide', '--id', id, '--on-behalf-of', 'alice', '--action', action, '--resource', resource,
    '--basis', 'web test', '--expires', '+1h', '--key', path.join(data, 'test-es256.key'), ...extra).trim();
}

async function waitState(id, want) {
  await waitFor(`${id} ${want}`, () => redisCli('HGET', `warrant:decision:${id}`, 'state') === want);
}

before(async () => {
  start('redis', 'redis-server', ['--port', '0', '--unixsocket', sock, '--unixsocketperm', '700',
    '--save', '', '--appendonly', 'no', '--dir', tmp]);
  await waitFor('redis', () => fs.existsSync(sock));
  await waitFor('redis PING', () => { try { return redisCli('PING') === 'PONG'; } catch { return false; } });
  // the library of functions every user calls, as Redis' administrator loads it
  execFileSync('redis-cli', ['-s', sock, '-x', 'FUNCTION', 'LOAD', 'REPLACE'],
    { input: execFileSync(path.join(bin, 'warrantctl'), ['functions', 'show']) });
  // the monitor user exactly as conf/redis-acl.conf has it, with a password
  const line = fs.readFileSync(path.join(root, 'conf/redis-acl.conf'), 'utf8').split('\n')
    .find((l) => l.startsWith('user monitor '));
  const monitorPw = 'monitor-secret-for-the-test';
  execFileSync('redis-cli', ['-s', sock, 'ACL', 'SETUSER', 'monitor',
    ...line.split(' ').slice(2), `>${monitorPw}`]);
  fs.writeFileSync(path.join(tmp, 'monitor.pw'), monitorPw, { mode: 0o600 });
  // and the operator's, for the actions
  const opLine = fs.readFileSync(path.join(root, 'conf/redis-acl.conf'), 'utf8').split('\n')
    .find((l) => l.startsWith('user operator '));
  execFileSync('redis-cli', ['-s', sock, 'ACL', 'SETUSER', 'operator',
    ...opLine.split(' ').slice(2), `>${monitorPw}-op`]);
  fs.writeFileSync(path.join(tmp, 'operator.pw'), `${monitorPw}-op`, { mode: 0o600 });

  const portFile = path.join(tmp, 'target.port');
  start('target', path.join(testBin, 'fake_target'), ['--port-file', portFile]);
  const targetPort = await waitFor('fake_target', () => fs.existsSync(portFile) &&
    fs.readFileSync(portFile, 'utf8').trim());
  const webPort = await freePort();
  base = `http://127.0.0.1:${webPort}`;
  fs.writeFileSync(ini, `[daemon]
consumer = web-test-1
heartbeat_ms = 500
[redis]
socket = ${sock}
block_ms = 200
[redis.monitor]
username = monitor
password_file = monitor.pw
[redis.operator]
username = operator
password_file = operator.pw
[records]
verify_key_file = ${path.join(data, 'test-es256.pub')}
[retry]
base_ms = 50
cap_ms = 100
max_attempts = 2
[web]
listen = 127.0.0.1:${webPort} unix:${path.join(tmp, 'web.sock')}
users_file = users
idle_timeout_s = 600
trusted_user_header = X-Forwarded-User
[action gate.open]
url = http://127.0.0.1:${targetPort}/gates/{resource}/open
auth = none
allow_http = yes
`, { mode: 0o600 });
  execFileSync(path.join(bin, 'warrantd-web'), ['passwd', path.join(tmp, 'users'), USER],
    { input: `${PASSWORD}\n` });

  // jobs in several states: done, failed (a 400), dead (503 until the
  // budget is spent), scheduled (an hour from now)
  const script = { default: {}, per_key: { 'web-fail-1': [{ status: 400 }],
    'web-dead-1': [{ status: 503 }, { status: 503 }, { status: 503 }] } };
  const r = await fetch(`http://127.0.0.1:${targetPort}/_script`, { method: 'POST', body: JSON.stringify(script) });
  assert.equal(r.status, 200);
  start('warrantd', path.join(bin, 'warrantd'), ['-c', ini]);
  for (let i = 1; i <= 3; i++) decide(`web-ok-${i}`, 'gate.open', `gate/${i}`);
  decide('web-fail-1', 'gate.open', 'gate/14', ['--traceparent', TRACE]);
  decide('web-dead-1', 'gate.open', 'gate/15');
  decide('web-later-1', 'gate.open', 'gate/16', ['--not-before', '+30m']);
  for (let i = 1; i <= 3; i++) await waitState(`web-ok-${i}`, 'done');
  await waitState('web-fail-1', 'failed');
  await waitState('web-dead-1', 'dead');

  web = start('warrantd-web', path.join(bin, 'warrantd-web'), ['-c', ini]);
  await waitFor('warrantd-web', async () => {
    try { return (await fetch(`${base}/login`)).status === 200; } catch { return false; }
  });
  fs.mkdirSync(shots, { recursive: true });
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    // root in CI has no user namespace for the sandbox; nothing but our
    // own pages is opened
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions'],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 860 });
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
});

after(async () => {
  if (browser) await browser.close();
  for (const c of children.reverse()) {
    if (c.exitCode === null) {
      c.kill('SIGTERM');
      await new Promise((r) => c.once('exit', r));
    }
  }
  if (process.env.WARRANTD_KEEP_TMP === undefined) fs.rmSync(tmp, { recursive: true, force: true });
});

test('without a session: every page sends to /login, the API and a POST are refused', async () => {
  for (const p of ['/', '/jobs', '/job/web-ok-1', '/dead']) {
    const r = await fetch(`${base}${p}`, { redirect: 'manual' });
    assert.equal(r.status, 303, p);
    assert.equal(r.headers.get('location'), '/login');
  }
  assert.equal((await fetch(`${base}/api/overview`)).status, 401);
  const post = await fetch(`${base}/logout`, { method: 'POST', body: 'csrf=x',
    headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(post.status, 403);
  const login = await fetch(`${base}/login`);
  assert.match(login.headers.get('content-security-policy'), /default-src 'self'/);
  assert.doesNotMatch(login.headers.get('content-security-policy'), /unsafe-inline/);
  assert.equal(login.headers.get('x-frame-options'), 'DENY');
  // a login without the form's token is refused before the password is looked at
  const noToken = await fetch(`${base}/login`, { method: 'POST',
    body: `user=${USER}&password=${encodeURIComponent(PASSWORD)}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(noToken.status, 403);
  assert.equal(noToken.headers.get('set-cookie')?.includes('wsid='), false);
});

test('one loop serves it all: a body over 8 KiB is refused (413), a connection is kept', async () => {
  // hsrv answers 413 itself, before any handler: not a login form, no cookie
  const big = await fetch(`${base}/login`, { method: 'POST', body: `csrf=x&user=${'u'.repeat(9000)}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(big.status, 413);
  assert.equal(big.headers.get('set-cookie'), null);
  const ok = await fetch(`${base}/login`, { method: 'POST', body: `csrf=x&user=${'u'.repeat(8000)}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(ok.status, 403);	// under the cap: the CSRF check's answer
  // keep-alive: the second answer comes on the first one's socket
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () => new Promise((resolve, reject) => {
    const req = http.get(`${base}/login`, { agent }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode, reused: req.reusedSocket }));
    });
    req.on('error', reject);
  });
  const first = await get(), second = await get();
  agent.destroy();
  assert.deepEqual([first, second], [{ status: 200, reused: false }, { status: 200, reused: true }]);
});

test('the unix socket serves the same console, mode 0660', async () => {
  const socketPath = path.join(tmp, 'web.sock');
  assert.equal(fs.statSync(socketPath).mode & 0o777, 0o660);
  const res = await new Promise((resolve, reject) => {
    http.get({ socketPath, path: '/', headers: { host: 'localhost' } }, resolve).on('error', reject);
  });
  res.resume();
  assert.equal(res.statusCode, 303);
  assert.equal(res.headers.location, '/login');
});

test('a trusted proxy header makes a session on the unix socket, and only there', async () => {
  const socketPath = path.join(tmp, 'web.sock');
  const viaUnix = (user) => new Promise((resolve, reject) => {
    http.get({ socketPath, path: '/', headers: { host: 'localhost', 'x-forwarded-user': user } }, (res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, cookie: res.headers['set-cookie'] ?? [], body }));
    }).on('error', reject);
  });
  const ok = await viaUnix('proxied.alice');
  assert.equal(ok.status, 200);
  assert.match(ok.cookie.join(';'), /wsid=[0-9a-f]{64}; Path=\/; HttpOnly; SameSite=Strict/);
  assert.match(ok.body, /proxied\.alice/);
  assert.equal((await viaUnix('not a user name')).status, 303);
  // over TCP anyone could send it: ignored
  const viaTcp = await fetch(`${base}/`, { redirect: 'manual', headers: { 'x-forwarded-user': 'proxied.alice' } });
  assert.equal(viaTcp.status, 303);
  assert.equal(viaTcp.headers.get('location'), '/login');
});

// the [web] section of the file, replaced: another console on the same data
function iniWith(name, web) {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, fs.readFileSync(ini, 'utf8').replace(/\[web\][^[]*/, `[web]\n${web}\n`),
    { mode: 0o600 });
  return file;
}

// [redis] tls (Sentinel and Cluster alike) was refused while the console read
// through a hiredis context of its own; now it reads through warrantctl's
// handle, and -t reads the TLS files (no connection is made)
test('-t with [redis] tls: accepted, its CA file read', () => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
    '-nodes', '-days', '1', '-subj', '/CN=redis-ca', '-keyout', path.join(tmp, 'redis-ca.key'),
    '-out', path.join(tmp, 'redis-ca.crt')], { stdio: 'ignore' });
  const withTls = (name, ca) => {
    const file = path.join(tmp, name);
    fs.writeFileSync(file, fs.readFileSync(ini, 'utf8').replace(/^socket = .*$/m,
      `host = 127.0.0.1\nport = 1\ntls = yes\ntls_ca_file = ${ca}`), { mode: 0o600 });
    return file;
  };
  const out = execFileSync(path.join(bin, 'warrantd-web'), ['-t', '-c', withTls('rtls.ini', 'redis-ca.crt')],
    { stdio: 'pipe' });
  assert.match(String(out), /\[web\] ok/);
  let err;
  try {
    execFileSync(path.join(bin, 'warrantd-web'), ['-t', '-c', withTls('rtls-bad.ini', 'no-such-ca.crt')],
      { stdio: 'pipe' });
  } catch (e) {
    err = e;
  }
  assert.equal(err?.status, 78);
  assert.match(String(err.stderr), /no-such-ca\.crt/);
  assert.doesNotMatch(String(err.stderr), /does not follow/);
});

test('off loopback only over TLS; over TLS the cookies are Secure', async () => {
  const plain = iniWith('open.ini', 'listen = 0.0.0.0:1\nusers_file = users');
  let err;
  try {
    execFileSync(path.join(bin, 'warrantd-web'), ['-t', '-c', plain], { stdio: 'pipe' });
  } catch (e) {
    err = e;
  }
  assert.equal(err?.status, 78);
  assert.match(String(err.stderr), /not a loopback address.*set tls_cert_file and tls_key_file/);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
    '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
    '-keyout', path.join(tmp, 'web.key'), '-out', path.join(tmp, 'web.crt')], { stdio: 'ignore' });
  fs.chmodSync(path.join(tmp, 'web.key'), 0o600);
  const port = await freePort();
  const tls = iniWith('tls.ini', `listen = 127.0.0.1:${port}\nusers_file = users\n` +
    'tls_cert_file = web.crt\ntls_key_file = web.key');
  const p = start('warrantd-web-tls', path.join(bin, 'warrantd-web'), ['-c', tls]);
  const ca = fs.readFileSync(path.join(tmp, 'web.crt'));
  const get = () => new Promise((resolve, reject) => {
    https.get({ host: '127.0.0.1', port, path: '/login', ca }, resolve).on('error', reject);
  });
  const res = await waitFor('warrantd-web over TLS', async () => { try { return await get(); } catch { return null; } });
  res.resume();
  assert.equal(res.statusCode, 200);
  assert.match(res.headers['set-cookie'].join(';'), /wlogin=[0-9a-f]{64}; Path=\/login; HttpOnly; SameSite=Strict; Secure/);
  assert.match(res.headers['strict-transport-security'], /max-age=/);
  p.kill('SIGTERM');
  await new Promise((r) => p.once('exit', r));
});

test('a wrong password is refused; the right one logs in with a strict cookie', async () => {
  await page.goto(`${base}/`);
  assert.equal(new URL(page.url()).pathname, '/login');
  await page.screenshot({ path: path.join(shots, 'login.png') });
  await page.type('input[name=user]', USER);
  await page.type('input[name=password]', 'not the password');
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  assert.match(await page.$eval('.err', (e) => e.textContent), /Wrong user or password/);
  await page.type('input[name=user]', USER);
  await page.type('input[name=password]', PASSWORD);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  assert.equal(new URL(page.url()).pathname, '/');
  const c = (await page.cookies()).find((k) => k.name === 'wsid');
  assert.ok(c, 'the session cookie');
  assert.equal(c.httpOnly, true);
  assert.equal(c.sameSite, 'Strict');
  assert.ok(!page.url().includes(c.value), 'no session id in a URL');
  assert.ok(!(await page.content()).includes(c.value), 'no session id in a page');
  assert.ok(!(await page.content()).includes('monitor-secret'), 'no Redis password in a page');
});

test('the overview shows what warrantctl status --json says', async () => {
  await page.goto(`${base}/`);
  // one refresh by console.js has come back
  await page.waitForFunction(() => document.getElementById('live')?.textContent === 'live');
  await new Promise((r) => setTimeout(r, 2300));
  const status = JSON.parse(execFileSync(path.join(bin, 'warrantctl'),
    ['-c', ini, 'status', '--json'], { encoding: 'utf8' }));
  const shown = await page.$$eval('[data-k]', (els) => Object.fromEntries(els.map((e) => [e.dataset.k, e.textContent])));
  for (const k of ['streamLength', 'pending', 'scheduled', 'dead', 'notify'])
    assert.equal(shown[`0.${k}`], String(status[k]), k);
  assert.equal(status.scheduled, 1);
  assert.equal(status.dead, 1);
  const api = await page.evaluate(async () => (await fetch('/api/overview')).json());
  for (const k of ['streamLength', 'pending', 'scheduled', 'dead', 'notify', 'lag'])
    assert.equal(api.streams[0][k], status[k], `api ${k}`);
  assert.deepEqual(Object.keys(api.streams[0].consumers).sort(), Object.keys(status.consumers).sort());
  const row = await page.$$eval('table.consumers tbody tr', (rows) => rows.map((r) => r.textContent));
  assert.ok(row.some((t) => t.startsWith('web-test-1') && t.includes('alive')), row.join('|'));
  // the alerts in plain words: the dead letter of a minute ago
  await page.waitForFunction(() => /dead letters rising: 1 in the last 15 minutes \([a-z-]+ 1\)/
    .test(document.getElementById('alerts').textContent), { timeout: 10000 });
  assert.doesNotMatch(await page.$eval('#alerts', (e) => e.textContent), /no live consumer/);
  await page.screenshot({ path: path.join(shots, 'overview.png'), fullPage: true });
  // the README's picture, when asked (a run must not change the tree)
  if (process.env.WEB_README_SHOT)
    fs.copyFileSync(path.join(shots, 'overview.png'), path.join(root, 'docs/web-console.png'));
});

test('a job is found by its id, and its page shows record, state and audit trail', async () => {
  await page.goto(`${base}/jobs`);
  await page.type('input[name=id]', 'web-fail-1');
  await Promise.all([page.waitForNavigation(), page.click('form.filters button')]);
  const rows = await page.$$eval('table.jobs tbody tr', (t) => t.map((r) => r.textContent));
  assert.equal(rows.length, 1, rows.join('|'));
  assert.match(rows[0], /web-fail-1.*failed.*gate\.open.*gate\/14.*alice/);
  await Promise.all([page.waitForNavigation(), page.click('table.jobs a[href="/job/web-fail-1"]')]);
  assert.match(await page.$eval('h1', (e) => e.textContent), /web-fail-1.*failed/);
  const dl = await page.$$eval('dt', (d) => d.map((x) => x.textContent));
  for (const k of ['onBehalfOf', 'action', 'resource', 'expiresAt', 'state', 'attempts']) assert.ok(dl.includes(k), k);
  const audit = await page.$$eval('table.audit tbody tr', (t) => t.map((r) => r.textContent));
  assert.ok(audit.length >= 2, audit.join('|'));
  // every attempt with its outcome and duration; the signature, kid and trace
  const attempts = await page.$$eval('table.attempts tbody tr', (t) => t.map((r) => r.textContent));
  assert.equal(attempts.length, 1, attempts.join('|'));
  assert.match(attempts[0], /^1.*failed\d+ ms/);
  assert.equal(await page.$eval('dd.sig', (e) => e.textContent), 'verified');
  assert.equal(await page.$eval('dd.traceparent', (e) => e.textContent), TRACE);
  assert.match(await page.$eval('.left', (e) => e.textContent), /left before its deadline/);
  assert.ok(audit.some((t) => t.includes('running') && t.includes('failed')), audit.join('|'));
  await page.screenshot({ path: path.join(shots, 'job.png'), fullPage: true });
  // by state, and paged
  await page.goto(`${base}/jobs?state=done`);
  const done = await page.$$eval('table.jobs tbody tr', (t) => t.map((r) => r.textContent));
  assert.equal(done.length, 3, done.join('|'));
  await page.goto(`${base}/jobs?state=scheduled`);
  const later = await page.$$eval('table.jobs tbody tr', (t) => t.map((r) => r.textContent));
  assert.equal(later.length, 1, later.join('|'));
  assert.match(later[0], /^web-later-1scheduled/);
  await page.goto(`${base}/jobs`);
  await page.screenshot({ path: path.join(shots, 'jobs.png'), fullPage: true });
  const missing = await page.goto(`${base}/job/no-such-job`);
  assert.equal(missing.status(), 404);
});

test('dead letters by reason, with counts', async () => {
  await page.goto(`${base}/dead`);
  const rows = await page.$$eval('table.dead tbody tr', (t) => t.map((r) => r.textContent));
  assert.equal(rows.length, 1, rows.join('|'));
  assert.match(rows[0], /^[a-z-]+1list/);
  await page.screenshot({ path: path.join(shots, 'dead.png'), fullPage: true });
});

test('a POST with a session but without the CSRF token is refused', async () => {
  await page.goto(`${base}/`);
  const codes = await page.evaluate(async () => {
    const h = { 'content-type': 'application/x-www-form-urlencoded' };
    const none = await fetch('/logout', { method: 'POST', body: 'x=1', headers: h });
    const wrong = await fetch('/logout', { method: 'POST', body: 'csrf=' + '0'.repeat(64), headers: h });
    const meta = document.querySelector('meta[name=csrf-token]').content;
    const json = await fetch('/logout', { method: 'POST', body: JSON.stringify({ csrf: meta }),
      headers: { 'content-type': 'application/json' } });
    return [none.status, wrong.status, json.status];
  });
  assert.deepEqual(codes, [403, 403, 403]);
  // still logged in: none of them ended the session
  assert.equal((await page.goto(`${base}/jobs`)).status(), 200);
  assert.equal(new URL(page.url()).pathname, '/jobs');
});

// One action from a page: its button, the confirmation naming what will
// happen, the POST; the page that says what was done.
async function act(buttonSelector, sentence) {
  await Promise.all([page.waitForNavigation(), page.click(buttonSelector)]);
  assert.match(await page.$eval('p.confirm', (e) => e.textContent), sentence);
  await Promise.all([page.waitForNavigation(), page.click('form.confirm button')]);
  return page.$eval('main', (e) => e.textContent);
}

test('a failed job found by its resource and retried from its page ends done', async () => {
  await page.goto(`${base}/jobs?resource=${encodeURIComponent('gate/14')}`);
  const rows = await page.$$eval('table.jobs tbody tr', (t) => t.map((r) => r.textContent));
  assert.equal(rows.length, 1, rows.join('|'));
  await Promise.all([page.waitForNavigation(), page.click('table.jobs a[href="/job/web-fail-1"]')]);
  // failed is terminal: retry, no cancel
  assert.equal(await page.$('button[data-op=cancel]'), null);
  const done = await act('button[data-op=retry]', /^retry web-fail-1: /);
  assert.match(done, /Done.*retried web-fail-1 with a fresh budget/s);
  await waitState('web-fail-1', 'done');
  const audit = redisCli('XRANGE', 'warrant:audit', '-', '+');
  assert.match(audit, /asked by console user operator, redis user operator/);
  await page.goto(`${base}/job/web-fail-1`);
  assert.match(await page.$eval('h1', (e) => e.textContent), /done/);
});

test('a paused action is shown paused, and resumed', async () => {
  await page.goto(`${base}/`);
  await page.select('form.pause select', 'gate.open');
  const done = await act('form.pause button', /^pause gate\.open: every worker/);
  assert.match(done, /paused gate\.open/);
  assert.match(redisCli('HGET', 'warrant:paused', 'gate.open'),
    /^by=console user operator, redis user operator at=\d{4}-/);
  await page.goto(`${base}/`);
  const paused = await page.$eval('#paused', (e) => e.textContent);
  assert.match(paused, /gate\.open by=console user operator/);
  // workers see a pause within a heartbeat (warrantd(7) §13); this one
  // says so in its heartbeat hash, and a job decided after that waits
  await waitFor('the worker sees the pause', () =>
    redisCli('HGET', 'warrant:consumer:web-test-1', 'paused').split(',').includes('gate.open'));
  decide('web-paused-1', 'gate.open', 'gate/20');
  await waitFor('web-paused-1 read', () => redisCli('HGET', 'warrant:decision:web-paused-1', 'state') !== '');
  // held by the pause, and shown so, not merely queued
  await page.goto(`${base}/jobs?id=web-paused-1`);
  assert.match(await page.$eval('table.jobs tbody tr', (r) => r.textContent), /held: paused/);
  await page.goto(`${base}/job/web-paused-1`);
  assert.match(await page.$eval('h1', (e) => e.textContent), /held: paused/);
  await page.goto(`${base}/`);
  await page.screenshot({ path: path.join(shots, 'paused.png'), fullPage: true });
  const resumed = await act('#paused button[data-op=resume]', /^resume gate\.open: /);
  assert.match(resumed, /resumed gate\.open/);
  assert.equal(redisCli('HEXISTS', 'warrant:paused', 'gate.open'), '0');
  await waitState('web-paused-1', 'done');
  await page.goto(`${base}/`);
  assert.equal(await page.$('#paused li'), null);
});

test('a dead letter is requeued, all of its reason, and its job ends done', async () => {
  await page.goto(`${base}/dead`);
  const reason = await page.$eval('table.dead tbody td', (e) => e.textContent);
  const done = await act('table.dead button[data-op=requeue-reason]',
    new RegExp(`^requeue 1 dead letter of reason ${reason}\\?$`));
  assert.match(done, /requeued web-dead-1 .*requeued 1 of 1 record/s);
  await waitState('web-dead-1', 'done');
  assert.equal(redisCli('XLEN', 'warrant:dead'), '0');
});

test('an action POST without its token or without a session is refused, and does nothing', async () => {
  await page.goto(`${base}/`);
  const codes = await page.evaluate(async () => {
    const h = { 'content-type': 'application/x-www-form-urlencoded' };
    const none = await fetch('/act', { method: 'POST', body: 'op=pause&arg=*', headers: h });
    const wrong = await fetch('/act', { method: 'POST', body: `op=pause&arg=*&csrf=${'0'.repeat(64)}`, headers: h });
    return [none.status, wrong.status];
  });
  assert.deepEqual(codes, [403, 403]);
  const csrf = await page.$eval('meta[name=csrf-token]', (e) => e.content);
  const anon = await fetch(`${base}/act`, { method: 'POST', body: `op=pause&arg=*&csrf=${csrf}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(anon.status, 403);
  assert.equal(redisCli('HLEN', 'warrant:paused'), '0');
});

test('with the monitor role only: no action button, and an action POST is refused', async () => {
  const port = await freePort();
  const file = path.join(tmp, 'monitor-only.ini');
  fs.writeFileSync(file, fs.readFileSync(ini, 'utf8').replace(/\[redis\.operator\][^[]*/, '')
    .replace(/\[web\][^[]*/, `[web]\nlisten = 127.0.0.1:${port}\nusers_file = users\n`), { mode: 0o600 });
  const p = start('warrantd-web-monitor', path.join(bin, 'warrantd-web'), ['-c', file]);
  const mon = `http://127.0.0.1:${port}`;
  await waitFor('monitor-only console', async () => {
    try { return (await fetch(`${mon}/login`)).status === 200; } catch { return false; }
  });
  // a context of its own: cookies are per host, not per port
  const ctx = await browser.createBrowserContext();
  const tab = await ctx.newPage();
  tab.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  await tab.goto(`${mon}/login`);
  await tab.type('input[name=user]', USER);
  await tab.type('input[name=password]', PASSWORD);
  await Promise.all([tab.waitForNavigation(), tab.click('button[type=submit]')]);
  for (const p2 of ['/', '/dead', '/jobs?state=dead', '/job/web-fail-1']) {
    await tab.goto(`${mon}${p2}`);
    assert.equal(await tab.$('form.act, button[data-op], form.pick'), null, p2);
  }
  const codes = await tab.evaluate(async () => {
    const csrf = document.querySelector('meta[name=csrf-token]').content;
    const h = { 'content-type': 'application/x-www-form-urlencoded' };
    const post = await fetch('/act', { method: 'POST', body: `op=pause&arg=*&csrf=${csrf}`, headers: h });
    const confirm = await fetch('/confirm?op=pause&arg=*');
    return [post.status, confirm.status];
  });
  assert.deepEqual(codes, [404, 404]);
  assert.equal(redisCli('HLEN', 'warrant:paused'), '0');
  await ctx.close();
  p.kill('SIGTERM');
  await new Promise((r) => p.once('exit', r));
});

// The charts' per-minute buckets (P:stats:<minute>) summed over every key.
function statsSum(field) {
  return redisCli('KEYS', 'warrant:stats:*').split('\n').filter(Boolean)
    .reduce((a, k) => a + Number(redisCli('HGET', k, field) || 0), 0);
}

async function login(p) {
  await p.goto(`${base}/login`);
  await p.type('input[name=user]', USER);
  await p.type('input[name=password]', PASSWORD);
  await Promise.all([p.waitForNavigation(), p.click('button[type=submit]')]);
}

test('charts: two workers\' per-minute counts add up, and outlive a console restart', async () => {
  // worker 1 did every job so far: 3 ok, the retried, the requeued, the paused one
  await waitFor('worker 1\'s counts', () => statsSum('o.done') === 6);
  assert.equal(statsSum('o.failed'), 1);
  assert.equal(statsSum('o.dead'), 1);
  const w1 = children.find((c) => c.spawnargs[0] === path.join(bin, 'warrantd'));
  w1.kill('SIGTERM');
  await new Promise((r) => w1.once('exit', r));
  // worker 2, another consumer, does the next four: its counts land in the same buckets
  const ini2 = path.join(tmp, 'worker2.ini');
  fs.writeFileSync(ini2, fs.readFileSync(ini, 'utf8').replace('consumer = web-test-1',
    'consumer = web-test-2'), { mode: 0o600 });
  start('warrantd-2', path.join(bin, 'warrantd'), ['-c', ini2]);
  for (let i = 1; i <= 4; i++) decide(`web-two-${i}`, 'gate.open', `gate/3${i}`);
  for (let i = 1; i <= 4; i++) await waitState(`web-two-${i}`, 'done');
  await waitFor('both workers\' counts', () => statsSum('o.done') === 10);
  const shown = async () => page.$$eval('[data-total]', (els) => els.map((e) =>
    [e.closest('section').id + ' ' + e.dataset.total, e.textContent]));
  await page.goto(`${base}/charts`);
  let totals = Object.fromEntries(await shown());
  assert.equal(totals['hour o.done'], '10');
  assert.equal(totals['day o.done'], '10');
  assert.equal(totals['hour o.failed'], '1');
  assert.ok(Object.keys(totals).some((k) => k.startsWith('deadchart d.')), JSON.stringify(totals));
  assert.match(await page.$eval('#latency', (e) => e.textContent), /gate\.open\d+ calls, mean \d+ ms/);
  assert.equal(await page.$$eval('svg.chart rect', (r) => r.length > 0), true);
  await page.screenshot({ path: path.join(shots, 'charts.png'), fullPage: true });
  // a console restart: the buckets are Redis', not the console's
  web.kill('SIGTERM');
  await new Promise((r) => web.once('exit', r));
  web = start('warrantd-web-again', path.join(bin, 'warrantd-web'), ['-c', ini]);
  await waitFor('warrantd-web again', async () => {
    try { return (await fetch(`${base}/login`)).status === 200; } catch { return false; }
  });
  await login(page);
  await page.goto(`${base}/charts`);
  totals = Object.fromEntries(await shown());
  assert.equal(totals['hour o.done'], '10');
});

test('log out ends the session', async () => {
  await page.goto(`${base}/`);
  await Promise.all([page.waitForNavigation(), page.click('form.who button')]);
  assert.equal(new URL(page.url()).pathname, '/login');
  const status = await page.evaluate(async () => (await fetch('/api/overview')).status);
  assert.equal(status, 401);
});

test('what a page load weighs, and what 100 overview refreshes cost', async (t) => {
  await page.goto(`${base}/login`);
  await page.type('input[name=user]', USER);
  await page.type('input[name=password]', PASSWORD);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  // a fresh load with the cache off: every byte the overview costs
  await page.setCacheEnabled(false);
  await page.goto(`${base}/`);
  await page.waitForFunction(() => performance.getEntriesByType('resource')
    .some((e) => e.name.endsWith('/api/overview')), { timeout: 5000 });
  const bytes = await page.evaluate(() => [...performance.getEntriesByType('navigation'),
    ...performance.getEntriesByType('resource')].map((e) => [e.name.replace(location.origin, ''), e.transferSize]));
  const total = bytes.reduce((a, [, n]) => a + n, 0);
  t.diagnostic(`overview page load: ${total} bytes on the wire (${bytes.map(([n, b]) => `${n} ${b}`).join(', ')})`);
  assert.ok(total < 64 * 1024, 'a page load stays small');
  await page.goto(`${base}/job/web-ok-1`);
  const jobBytes = await page.evaluate(() => [...performance.getEntriesByType('navigation'),
    ...performance.getEntriesByType('resource')].map((e) => [e.name.replace(location.origin, ''), e.transferSize]));
  t.diagnostic(`job page load: ${jobBytes.reduce((a, [, n]) => a + n, 0)} bytes on the wire ` +
    `(${jobBytes.map(([n, b]) => `${n} ${b}`).join(', ')})`);
  await page.goto(`${base}/charts`);
  const chartBytes = await page.evaluate(() => [...performance.getEntriesByType('navigation'),
    ...performance.getEntriesByType('resource')].map((e) => [e.name.replace(location.origin, ''), e.transferSize]));
  t.diagnostic(`charts page load: ${chartBytes.reduce((a, [, n]) => a + n, 0)} bytes on the wire ` +
    `(${chartBytes.map(([n, b]) => `${n} ${b}`).join(', ')})`);
  const before = footprint(web.pid);
  await page.evaluate(async () => { for (let i = 0; i < 100; i++) await (await fetch('/api/overview')).json(); });
  const afterRefresh = footprint(web.pid);
  t.diagnostic(`warrantd-web: ${afterRefresh.rssKb} kB RSS; 100 /api/overview answers: ` +
    `${afterRefresh.cpuMs - before.cpuMs} ms CPU`);
  await page.setCacheEnabled(true);
});

// The closing note's figure (issue 39): the console's CPU and RSS while 10
// browsers (each its own context: cookies and connections of its own)
// watch the overview for 20 s and a worker runs flat out against
// fake_target. The queue never runs dry: 80,000 ES256 records from
// bench/mkrecords preloaded while the action is paused, 2,000 more added
// batch after batch during the window (mkrecords signs slower than the
// worker runs on this machine). Opt-in: `make test-web-load` (WEB_LOAD=1);
// it prints jobs/s done meanwhile, the queue left at the end (> 0: the
// worker never waited), the console's CPU s and RSS kB. Numbers, not
// assertions: tests/README.md.
test('10 browsers watching the overview for 20 s beside a worker at full speed', { skip: !process.env.WEB_LOAD }, async (t) => {
  const mk = path.join(testBin, 'mkrecords');
  const gen = (first, n) => new Promise((resolve, reject) => {
    const file = path.join(tmp, `load-${first}.resp`);
    const out = fs.openSync(file, 'w');
    const p = spawn(mk, [String(n), 'warrant', path.join(data, 'test-es256.key')], {
      env: { ...process.env, BENCH_FIRST: String(first), BENCH_EXPIRES_S: '900' },
      stdio: ['ignore', out, 'inherit'] });
    p.once('exit', (code) => {
      fs.closeSync(out);
      if (code === 0) resolve(file); else reject(new Error(`mkrecords exited ${code}`));
    });
  });
  const load = (file) => {
    execFileSync('sh', ['-c', 'redis-cli -s "$0" --pipe <"$1" >/dev/null', sock, file]);
    fs.unlinkSync(file);
  };
  const lag = () => JSON.parse(ctl('status', '--json')).lag;	// one stream, no shards
  redisCli('HSET', 'warrant:paused', 'gate.open', 'by=load test');
  const pre = [0, 1, 2, 3].map((i) => gen(1 + i * 20000, 20000));
  const contexts = [];
  const pages = [];
  for (let i = 0; i < 10; i++) {
    const c = await browser.createBrowserContext();
    const p = await c.newPage();
    await login(p);
    contexts.push(c);
    pages.push(p);
  }
  for (const f of await Promise.all(pre)) load(f);
  let fed = 80000, stop = false;
  const topUp = (async () => {
    while (!stop) {
      const f = await gen(fed + 1, 2000);
      load(f);
      fed += 2000;
    }
  })();
  let f0, f1, t0, secs, left, done0;
  try {
    done0 = statsSum('o.done');
    redisCli('HDEL', 'warrant:paused', 'gate.open');
    f0 = footprint(web.pid);
    t0 = Date.now();
    await new Promise((r) => setTimeout(r, 20000));	// the window measured, not a wait
    f1 = footprint(web.pid);
    secs = (Date.now() - t0) / 1000;
    left = lag();
  } finally {
    stop = true;
    await topUp;
  }
  await new Promise((r) => setTimeout(r, 1500));	// the last heartbeat's counts
  const done = statsSum('o.done') - done0;
  const live = await Promise.all(pages.map((p) => p.$eval('#live', (e) => e.textContent)));
  for (const c of contexts) await c.close();
  t.diagnostic(`load: ${fed} jobs fed, about ${done} done in ${secs.toFixed(1)} s ` +
    `(${(done / secs).toFixed(0)} jobs/s), ${left}${left >= 10000 ? ' or more' : ''} still queued at the end` +
    (left > 0 ? '' : ' (the queue ran dry: not full speed throughout)'));
  t.diagnostic(`load: warrantd-web with 10 browsers on / (refresh every 2 s): ` +
    `${((f1.cpuMs - f0.cpuMs) / 1000).toFixed(2)} s CPU in ${secs.toFixed(1)} s ` +
    `(${((f1.cpuMs - f0.cpuMs) / (secs * 10)).toFixed(1)} % of one CPU), ${f1.rssKb} kB RSS ` +
    `(${f0.rssKb} kB before)`);
  assert.ok(done > 0, 'the worker ran jobs meanwhile');
  assert.ok(live.every((l) => l === 'live'), live.join('|'));
});

test('no console errors (CSP violations included) on any page', () => {
  assert.deepEqual(consoleErrors.filter((e) => !/status of (401|403|404)/.test(e)), []);
});

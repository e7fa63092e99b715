// SPDX-License-Identifier: BSD-2-Clause
// warrantd against a real authorization server (issue 26): node-oidc-provider
// 9.13.3 on 127.0.0.1 with the client credentials grant, private_key_jwt,
// DPoP (RFC 9449, its nonce demanded) and RAR (RFC 9396); a resource server
// here that verifies the provider's JWT access tokens and every DPoP proof
// (RFC 9449 §4.3 and §7: signature, htm, htu, iat, ath, a jti never seen,
// its own nonce, cnf.jkt = the proof's key). The real warrantd and
// warrantctl run against both, with a real redis-server.
//
//   make interop-oidc   (installs the pinned packages, then node --test this)
//
// Everything listens on 127.0.0.1; nothing here reaches another host.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import Provider, { errors } from 'oidc-provider';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const bin = process.env.WARRANTD_BIN_DIR ?? path.join(root, 'build/release/bin');
const data = path.join(root, 'tests/data');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'warrantd-oidc-'));
const CLIENT_ID = 'warrantd-interop';
const children = [];

const b64u = (buf) => Buffer.from(buf).toString('base64url');
const sha256 = (s) => crypto.createHash('sha256').update(s).digest();
// RFC 7638 for an EC key, by hand
const thumbprint = (jwk) => b64u(sha256(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y })));

function decodeJws(t) {
  const [h, p, s] = String(t).split('.');
  return {
    header: JSON.parse(Buffer.from(h, 'base64url')),
    payload: JSON.parse(Buffer.from(p, 'base64url')),
    input: `${h}.${p}`,
    sig: Buffer.from(s ?? '', 'base64url'),
  };
}

function es256Verifies(jwk, input, sig) {
  try {
    const key = crypto.createPublicKey({ key: jwk, format: 'jwk' });
    return crypto.verify('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }, sig);
  } catch {
    return false;
  }
}

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

async function waitFor(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// ---- keys: the client's (private_key_jwt), the DPoP key, the server's ----

const clientKeyFile = path.join(data, 'test-es256.key');	// also the decider's
const dpopKeyFile = path.join(data, 'test-es256-other.key');
const clientJwk = crypto.createPublicKey(fs.readFileSync(clientKeyFile)).export({ format: 'jwk' });
const dpopJwk = crypto.createPublicKey(fs.readFileSync(dpopKeyFile)).export({ format: 'jwk' });
const serverKey = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const serverJwk = { ...serverKey.privateKey.export({ format: 'jwk' }), kid: 'as-1', use: 'sig', alg: 'ES256' };
const serverPublic = { ...serverKey.publicKey.export({ format: 'jwk' }), kid: 'as-1' };

// ---- the resource server: verifies tokens and DPoP proofs ----

const calls = [];
const seenJti = new Set();
let rsNonce = `rs-${crypto.randomUUID()}`;
let rsChallenges = 0;
let lastToken;

function rsHandle(req, res) {
  const refuse = (error) => {
    const headers = { 'WWW-Authenticate': `DPoP algs="ES256", error="${error}"` };
    if (error === 'use_dpop_nonce') {
      headers['DPoP-Nonce'] = rsNonce;
      rsChallenges++;
    }
    calls.push({ path: req.url, status: 401, error });
    res.writeHead(401, headers).end();
  };
  const auth = req.headers.authorization ?? '';
  const proof = req.headers.dpop;
  if (!auth.startsWith('DPoP ') || typeof proof !== 'string') return refuse('invalid_token');
  const token = auth.slice(5);
  let at, p;
  try {
    at = decodeJws(token);
    p = decodeJws(proof);
  } catch {
    return refuse('invalid_token');
  }
  if (at.header.kid !== serverPublic.kid || !es256Verifies(serverPublic, at.input, at.sig) ||
      !(at.payload.exp > Date.now() / 1000))
    return refuse('invalid_token');
  if (p.header.typ !== 'dpop+jwt' || p.header.alg !== 'ES256' || !p.header.jwk || p.header.jwk.d ||
      !es256Verifies(p.header.jwk, p.input, p.sig))
    return refuse('invalid_dpop_proof');
  const htu = `http://${req.headers.host}${req.url.split(/[?#]/)[0]}`;
  const c = p.payload;
  if (c.htm !== req.method || c.htu !== htu || c.ath !== b64u(sha256(token)) ||
      !(Math.abs(c.iat - Date.now() / 1000) <= 60) || typeof c.jti !== 'string' || seenJti.has(c.jti))
    return refuse('invalid_dpop_proof');
  if (c.nonce !== rsNonce) return refuse('use_dpop_nonce');
  seenJti.add(c.jti);
  if (at.payload.cnf?.jkt !== thumbprint(p.header.jwk)) return refuse('invalid_token');
  calls.push({
    path: req.url, status: 200, key: req.headers['idempotency-key'],
    token: at.payload, proofJkt: thumbprint(p.header.jwk),
  });
  lastToken = token;	// what a thief on the wire would see
  res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
}

// ---- the world ----

const rs = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => rsHandle(req, res));
});
const rsPort = await listen(rs);
const rsOrigin = `http://127.0.0.1:${rsPort}`;

const asServer = http.createServer();
const asPort = await listen(asServer);
const issuer = `http://127.0.0.1:${asPort}`;
let rarValidated = 0;

const provider = new Provider(issuer, {
  clients: [{
    client_id: CLIENT_ID,
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_signing_alg: 'ES256',
    id_token_signed_response_alg: 'ES256',	// the server's one key is EC
    jwks: { keys: [{ ...clientJwk, use: 'sig', alg: 'ES256' }] },
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    dpop_bound_access_tokens: true,
    authorization_details_types: ['warrant'],
  }],
  jwks: { keys: [serverJwk] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    dPoP: { enabled: true, nonceSecret: crypto.randomBytes(32), requireNonce: () => true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => rsOrigin,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => ({
        scope: 'gates',
        audience: resource,
        accessTokenFormat: 'jwt',
        accessTokenTTL: 300,
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
    // RFC 9396 on the client credentials grant: the details are checked
    // against the one type this server knows (validate), and what is
    // granted goes into the access token
    richAuthorizationRequests: {
      enabled: true,
      types: {
        warrant: {
          // one action on one resource at the target's origin, nothing more
          validate(ctx, detail) {
            rarValidated++;
            const ok = Array.isArray(detail.actions) && detail.actions.length === 1 &&
              Array.isArray(detail.locations) && detail.locations.length === 1 &&
              detail.locations[0] === rsOrigin && typeof detail.identifier === 'string' &&
              !detail.identifier.startsWith('forbidden/');
            if (!ok) throw new errors.InvalidAuthorizationDetails('not what this server grants');
          },
        },
      },
      authorizationDetailsForAccessToken: (ctx) => JSON.parse(ctx.oidc.params.authorization_details),
      authorizationDetailsForGrantSource: (ctx, source) => source.rar,
      authorizationDetailsForIntrospection: (ctx, token) => token.rar,
    },
  },
});
asServer.on('request', provider.callback());
const tokenRequests = [];
provider.on('grant.success', (ctx) => tokenRequests.push({ status: 200, dpop: Boolean(ctx.get('dpop')) }));
provider.on('grant.error', (ctx, err) => tokenRequests.push({ status: err.statusCode, error: err.error }));
provider.on('server_error', (ctx, err) => console.error('oidc-provider server_error:', err));

// redis-server on a unix socket of its own
const sock = path.join(tmp, 'redis.sock');
const redis = spawn('redis-server', ['--port', '0', '--unixsocket', sock, '--unixsocketperm', '700',
  '--save', '', '--appendonly', 'no', '--dir', tmp], { stdio: 'ignore' });
children.push(redis);
await waitFor('redis', () => fs.existsSync(sock));
await waitFor('redis PING', () => {
  try { return execFileSync('redis-cli', ['-s', sock, 'PING'], { encoding: 'utf8' }).trim() === 'PONG'; } catch { return false; }
});
// the library of functions every user calls, as Redis' administrator loads it
execFileSync('redis-cli', ['-s', sock, '-x', 'FUNCTION', 'LOAD', 'REPLACE'],
  { input: execFileSync(path.join(bin, 'warrantctl'), ['functions', 'show']) });

const ini = path.join(tmp, 'warrantd.ini');
fs.writeFileSync(ini, `[daemon]
consumer = interop
log_level = debug
[redis]
socket = ${sock}
block_ms = 200
[records]
verify_key_file = ${path.join(data, 'test-es256.pub')}
[oauth]
token_url = ${issuer}/token
client_id = ${CLIENT_ID}
auth_method = private_key_jwt
private_key_file = ${clientKeyFile}
assertion_alg = ES256
resource = ${rsOrigin}
dpop_key_file = ${dpopKeyFile}
[retry]
base_ms = 100
cap_ms = 500
[action gate.open]
url = ${rsOrigin}/gates/{resource}/open
auth = oauth
timeout_ms = 3000
[action gate.rar]
url = ${rsOrigin}/gates/{resource}/rar
auth = oauth
token = per-record
resource = ${rsOrigin}
timeout_ms = 3000
`);
fs.chmodSync(ini, 0o600);

const log = fs.openSync(path.join(tmp, 'warrantd.log'), 'w');
const daemon = spawn(path.join(bin, 'warrantd'), ['-c', ini], { stdio: ['ignore', log, log] });
children.push(daemon);

after(() => {
  for (const c of children.reverse()) c.kill('SIGTERM');
  rs.close();
  asServer.close();
  if (process.env.INTEROP_KEEP === undefined) fs.rmSync(tmp, { recursive: true, force: true });
});

function decide(action, resource) {
  return execFileSync(path.join(bin, 'warrantctl'), ['-c', ini, 'decide', '--on-behalf-of', 'alice',
    '--action', action, '--resource', resource, '--basis', 'interop', '--expires', '+10m',
    '--key', clientKeyFile], { encoding: 'utf8' }).trim();
}

function field(id, name) {
  return execFileSync('redis-cli', ['-s', sock, 'HGET', `warrant:decision:${id}`, name],
    { encoding: 'utf8' }).trim();
}

async function waitState(id, want) {
  return waitFor(`${id} ${want}`, () => {
    const s = field(id, 'state');
    if (['done', 'failed', 'dead', 'expired', 'denied'].includes(s) && s !== want)
      throw new Error(`${id} is ${s} (${field(id, 'outcome')}), not ${want}; log in ${tmp}`);
    return s === want;
  });
}

// ---- the tests ----

test('client credentials + private_key_jwt + DPoP with nonces: the token is bound to the key', async () => {
  const ids = [decide('gate.open', 'lock/7'), decide('gate.open', 'lock/8')];
  for (const id of ids) await waitState(id, 'done');
  for (const id of ids) assert.equal(field(id, 'attempts'), '1', 'a nonce challenge is no attempt');
  const ok = calls.filter((c) => c.status === 200 && ids.includes(c.key));
  assert.equal(ok.length, 2);
  for (const c of ok) {
    assert.equal(c.token.cnf.jkt, thumbprint(dpopJwk), 'cnf.jkt is the DPoP key\'s thumbprint');
    assert.equal(c.proofJkt, thumbprint(dpopJwk));
    assert.equal(c.token.client_id, CLIENT_ID);
    assert.equal(c.token.aud, rsOrigin);
  }
  // the provider demanded a nonce at least once and the worker answered it
  assert.ok(tokenRequests.some((r) => r.error === 'use_dpop_nonce'), 'the AS challenged');
  assert.ok(tokenRequests.some((r) => r.status === 200));
  assert.ok(rsChallenges >= 1, 'the resource server challenged');
});

test('a new resource-server nonce: one more challenge, no attempt', async () => {
  rsNonce = `rs-${crypto.randomUUID()}`;
  const before = rsChallenges;
  const id = decide('gate.open', 'lock/9');
  await waitState(id, 'done');
  assert.equal(field(id, 'attempts'), '1');
  assert.equal(rsChallenges, before + 1);
});

// What a stolen token is worth: nothing without the key that never left the
// worker -- neither as a bearer nor with a proof signed by another key.
test('a stolen DPoP-bound token is refused without the worker\'s key', async () => {
  assert.ok(lastToken, 'a token was seen');
  const url = `${rsOrigin}/gates/lock%2F7/open`;
  const asBearer = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${lastToken}` } });
  assert.equal(asBearer.status, 401);
  const thief = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = thief.publicKey.export({ format: 'jwk' });
  const header = b64u(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk }));
  const claims = b64u(JSON.stringify({
    jti: crypto.randomUUID(), htm: 'POST', htu: url.split('?')[0], iat: Math.floor(Date.now() / 1000),
    ath: b64u(sha256(lastToken)), nonce: rsNonce,
  }));
  const sig = crypto.sign('sha256', Buffer.from(`${header}.${claims}`), { key: thief.privateKey, dsaEncoding: 'ieee-p1363' });
  const withThiefKey = await fetch(url, {
    method: 'POST',
    headers: { authorization: `DPoP ${lastToken}`, dpop: `${header}.${claims}.${b64u(sig)}` },
  });
  assert.equal(withThiefKey.status, 401);
  assert.match(withThiefKey.headers.get('www-authenticate'), /error="invalid_token"/);
});

test('per-record (RAR): the granted authorization_details name this action on this resource', async () => {
  const a = decide('gate.rar', 'lock/1');
  const b = decide('gate.rar', 'lock/2');
  await waitState(a, 'done');
  await waitState(b, 'done');
  for (const [id, res] of [[a, 'lock/1'], [b, 'lock/2']]) {
    const c = calls.find((x) => x.status === 200 && x.key === id);
    assert.ok(c, `a call for ${id}`);
    assert.deepEqual(c.token.authorization_details, [{
      type: 'warrant', actions: ['gate.rar'], locations: [rsOrigin], identifier: res,
    }]);
    assert.equal(c.token.cnf.jkt, thumbprint(dpopJwk), 'per-record tokens are DPoP-bound too');
  }
  assert.ok(rarValidated >= 2);
  // a resource the AS will not grant: failed with its error as the reason
  const f = decide('gate.rar', 'forbidden/1');
  await waitState(f, 'failed');
  assert.equal(field(f, 'outcome'), 'invalid_authorization_details');
  assert.ok(!calls.some((c) => c.key === f), 'no call without a token');
});

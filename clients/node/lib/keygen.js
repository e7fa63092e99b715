// SPDX-License-Identifier: BSD-2-Clause
// A key pair in one command: PREFIX.key (0600), PREFIX.pub and
// PREFIX.jwks.json (the public key with its kid), or PREFIX.secret for HS256.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { calculateJwkThumbprint, exportJWK } from 'jose';

const write = (path, data, mode) => { writeFileSync(path, data, { mode, flag: 'wx' }); chmodSync(path, mode); };

export async function keygen(out = 'decider', alg = 'ES256', kid = null) {
  if (alg === 'HS256') {
    write(`${out}.secret`, randomBytes(32).toString('base64url') + '\n', 0o600);
    return [`${out}.secret`];
  }
  let pair;
  if (alg === 'ES256') pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  else if (alg === 'RS256') pair = generateKeyPairSync('rsa', { modulusLength: 3072 });
  else throw new Error(`${alg}: not ES256, RS256 or HS256`);
  const jwk = await exportJWK(pair.publicKey);
  // default kid: the RFC 7638 thumbprint
  kid ??= await calculateJwkThumbprint(jwk);
  write(`${out}.key`, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), 0o600);
  write(`${out}.pub`, pair.publicKey.export({ type: 'spki', format: 'pem' }), 0o644);
  write(`${out}.jwks.json`, JSON.stringify({ keys: [{ ...jwk, kid, alg, use: 'sig' }] }, null, 2) + '\n', 0o644);
  return [`${out}.key`, `${out}.pub`, `${out}.jwks.json`];
}

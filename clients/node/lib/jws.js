// SPDX-License-Identifier: BSD-2-Clause
// JWS compact serialization (RFC 7515) of a record: ES256 (R || S), RS256,
// HS256, the header as jws.c writes it. A Signer parses its key once.
import { createHmac, createPrivateKey, sign as cryptoSign } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { KeyFileError } from './record.js';

export const ALGS = ['ES256', 'RS256', 'HS256'];
export const TYP = 'decision+jwt';
const b64u = (b) => Buffer.from(b).toString('base64url');

export function readSecretFile(path) {
  let st, data;
  try { st = statSync(path); data = readFileSync(path); }
  catch (e) { throw new KeyFileError(`cannot read ${path}: ${e.code}`); }
  if (st.mode & 0o077) throw new KeyFileError(`${path}: readable by group or others (chmod 0600 it)`);
  return data;
}

function fromJwk(alg, jwk) {
  if (jwk.alg !== undefined && jwk.alg !== alg) throw new KeyFileError(`the JWK's alg is ${jwk.alg}, not ${alg}`);
  if (alg === 'HS256' && jwk.kty === 'oct' && jwk.k) return Buffer.from(jwk.k, 'base64url');
  const ok = (alg === 'ES256' && jwk.kty === 'EC' && jwk.crv === 'P-256') || (alg === 'RS256' && jwk.kty === 'RSA');
  if (!ok || !jwk.d) throw new KeyFileError(`the JWK is not a private ${alg} key`);
  const { kid, alg: _a, use, key_ops, ...k } = jwk; // eslint-disable-line no-unused-vars
  return createPrivateKey({ key: k, format: 'jwk' });
}

/** The private key (or HMAC secret) and its kid from a key file's bytes. */
export function loadSigningKey(alg, data, kid = null) {
  if (!ALGS.includes(alg)) throw new KeyFileError(`algorithm ${alg} is not ES256, RS256 or HS256`);
  const text = data.toString('utf8').trim();
  if (text.startsWith('{')) {
    let doc;
    try { doc = JSON.parse(text); } catch (e) { throw new KeyFileError(`not JSON: ${e.message}`); }
    const keys = Array.isArray(doc.keys) ? doc.keys : [doc];
    if (keys.length === 0) throw new KeyFileError('a JWKS without keys');
    if (kid == null && keys.length > 1) throw new KeyFileError('the JWKS holds several keys: name one by kid');
    const jwk = keys.find((k) => kid == null || k.kid === kid);
    if (!jwk) throw new KeyFileError(`no key with kid ${kid}`);
    return { key: fromJwk(alg, jwk), kid: kid ?? jwk.kid ?? null };
  }
  if (alg === 'HS256') {
    const secret = Buffer.from(text, 'utf8');
    if (secret.length < 32 || text.includes('-----BEGIN')) throw new KeyFileError('not a usable HS256 secret (at least 32 bytes, not a PEM)');
    return { key: secret, kid };
  }
  let key;
  try { key = createPrivateKey(data); } catch (e) { throw new KeyFileError(`not a private key (PEM): ${e.message}`); }
  const d = key.asymmetricKeyDetails || {};
  if (alg === 'ES256' && !(key.asymmetricKeyType === 'ec' && d.namedCurve === 'prime256v1')) throw new KeyFileError('not a P-256 private key (ES256)');
  if (alg === 'RS256' && !(key.asymmetricKeyType === 'rsa' && d.modulusLength >= 2048)) throw new KeyFileError('not an RSA private key of at least 2048 bits (RS256)');
  return { key, kid };
}

export class Signer {
  constructor(alg, key, kid = null) {
    this.alg = alg; this.key = key; this.kid = kid;
    const h = { alg, typ: TYP };
    if (kid != null) h.kid = kid;
    this.head = b64u(JSON.stringify(h)) + '.';
    this.opts = alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key;
  }
  static fromFile(alg, path, kid = null) {
    const { key, kid: k } = loadSigningKey(alg, readSecretFile(path), kid);
    return new Signer(alg, key, k);
  }
  /** payload: a Buffer; the compact JWS. */
  sign(payload) {
    const input = this.head + payload.toString('base64url');
    const sig = this.alg === 'HS256' ? createHmac('sha256', this.key).update(input).digest()
      : cryptoSign('sha256', Buffer.from(input), this.opts);
    return input + '.' + sig.toString('base64url');
  }
}

export const payloadOf = (jws) => Buffer.from(jws.split('.')[1], 'base64url');

# SPDX-License-Identifier: BSD-2-Clause
"""JWS compact serialization (RFC 7515) of a record: ES256 (R || S), RS256,
HS256, the header as jws.c writes it ({"alg","typ":"decision+jwt","kid"}).
A Signer parses its key once; sign() is the fast path."""

import base64
import hashlib
import hmac
import json
import os

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed, decode_dss_signature

from .errors import KeyFileError

ALGS = ("ES256", "RS256", "HS256")
TYP = "decision+jwt"


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=")


def b64u_decode(s):
    if isinstance(s, str):
        s = s.encode()
    return base64.urlsafe_b64decode(s + b"=" * (-len(s) % 4))


def _int(s):
    return int.from_bytes(b64u_decode(s), "big")


def _jwk_private(alg, jwk):
    kty = jwk.get("kty")
    if "alg" in jwk and jwk["alg"] != alg:
        raise KeyFileError(f"the JWK's alg is {jwk['alg']}, not {alg}")
    if alg == "ES256" and kty == "EC" and jwk.get("crv") == "P-256" and "d" in jwk:
        pub = ec.EllipticCurvePublicNumbers(_int(jwk["x"]), _int(jwk["y"]), ec.SECP256R1())
        return ec.EllipticCurvePrivateNumbers(_int(jwk["d"]), pub).private_key()
    if alg == "RS256" and kty == "RSA" and "d" in jwk:
        n, e, d = _int(jwk["n"]), _int(jwk["e"]), _int(jwk["d"])
        p, q = _int(jwk["p"]), _int(jwk["q"])
        nums = rsa.RSAPrivateNumbers(p, q, d, rsa.rsa_crt_dmp1(d, p), rsa.rsa_crt_dmq1(d, q),
                                     rsa.rsa_crt_iqmp(p, q), rsa.RSAPublicNumbers(e, n))
        return nums.private_key()
    if alg == "HS256" and kty == "oct" and "k" in jwk:
        return b64u_decode(jwk["k"])
    raise KeyFileError(f"the JWK is not a private {alg} key")


def read_secret_file(path):
    """A secret file: not readable by group or others (warrantd(7) §9)."""
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise KeyFileError(f"cannot read {path}: {e.strerror}") from None
    if st.st_mode & 0o077:
        raise KeyFileError(f"{path}: readable by group or others (chmod 0600 it)")
    return data


def load_signing_key(alg, data, kid=None):
    """The private key (or HMAC secret) and its kid from a key file's bytes:
    a PEM private key, a JWK or a JWKS of private keys (the one named by kid,
    or the only one), or for HS256 the secret (trimmed, >= 32 bytes, no PEM)."""
    if alg not in ALGS:
        raise KeyFileError(f"algorithm {alg!r} is not ES256, RS256 or HS256")
    text = data.lstrip()
    if text.startswith(b"{"):
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise KeyFileError(f"not JSON: {e}") from None
        keys = doc.get("keys") if isinstance(doc, dict) and "keys" in doc else [doc]
        if not isinstance(keys, list) or not keys:
            raise KeyFileError("a JWKS without keys")
        if kid is None and len(keys) > 1:
            raise KeyFileError("the JWKS holds several keys: name one by kid")
        pick = [k for k in keys if kid is None or k.get("kid") == kid]
        if not pick:
            raise KeyFileError(f"no key with kid {kid!r}")
        jwk = pick[0]
        return _jwk_private(alg, jwk), kid if kid is not None else jwk.get("kid")
    if alg == "HS256":
        secret = data.strip()
        if len(secret) < 32 or b"-----BEGIN" in secret:
            raise KeyFileError("not a usable HS256 secret (at least 32 bytes, not a PEM)")
        return secret, kid
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as e:
        raise KeyFileError(f"not a private key (PEM): {e}") from None
    if alg == "ES256" and not (isinstance(key, ec.EllipticCurvePrivateKey) and
                               isinstance(key.curve, ec.SECP256R1)):
        raise KeyFileError("not a P-256 private key (ES256)")
    if alg == "RS256" and not (isinstance(key, rsa.RSAPrivateKey) and key.key_size >= 2048):
        raise KeyFileError("not an RSA private key of at least 2048 bits (RS256)")
    return key, kid


class Signer:
    """One key, parsed once; sign(payload bytes) -> the compact JWS (str)."""

    def __init__(self, alg, key, kid=None):
        self.alg, self.key, self.kid = alg, key, kid
        header = {"alg": alg, "typ": TYP}
        if kid is not None:
            header["kid"] = kid
        self._head = b64u(json.dumps(header, separators=(",", ":"),
                                     ensure_ascii=False).encode()) + b"."
        if alg == "ES256":
            # hashed by hashlib: cryptography's hash objects cost more than the hash
            self._ecdsa = ec.ECDSA(Prehashed(hashes.SHA256()))
        elif alg == "RS256":
            self._pad, self._hash = padding.PKCS1v15(), hashes.SHA256()

    @classmethod
    def from_file(cls, alg, path, kid=None):
        key, kid = load_signing_key(alg, read_secret_file(path), kid)
        return cls(alg, key, kid)

    def sign(self, payload):
        signing_input = self._head + b64u(payload)
        if self.alg == "ES256":
            digest = hashlib.sha256(signing_input).digest()
            r, s = decode_dss_signature(self.key.sign(digest, self._ecdsa))
            sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        elif self.alg == "RS256":
            sig = self.key.sign(signing_input, self._pad, self._hash)
        else:
            sig = hmac.new(self.key, signing_input, hashlib.sha256).digest()
        return (signing_input + b"." + b64u(sig)).decode("ascii")


def payload_of(jws):
    """The payload bytes of a compact JWS (not verified: for tests and tools)."""
    return b64u_decode(jws.split(".")[1])

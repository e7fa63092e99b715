# SPDX-License-Identifier: BSD-2-Clause
"""A key pair in one command: the private key (0600) for the decider, the
public key (PEM) and a JWKS with its kid for the workers' verify_key_file."""

import argparse
import base64
import json
import os
import secrets
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa


def _b64u_int(n, size=None):
    b = n.to_bytes(size or (n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def public_jwk(pub, alg, kid):
    if alg == "ES256":
        nums = pub.public_numbers()
        jwk = {"kty": "EC", "crv": "P-256", "x": _b64u_int(nums.x, 32), "y": _b64u_int(nums.y, 32)}
    else:
        nums = pub.public_numbers()
        jwk = {"kty": "RSA", "n": _b64u_int(nums.n), "e": _b64u_int(nums.e)}
    jwk.update({"kid": kid, "alg": alg, "use": "sig"})
    return jwk


def _write(path, data, mode):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def keygen(out, alg="ES256", kid=None):
    """Writes OUT.key (0600) and, for ES256/RS256, OUT.pub and OUT.jwks.json;
    for HS256 OUT.secret (0600, the same file for the workers). Refuses to
    overwrite. Returns the paths written."""
    kid = kid or secrets.token_hex(8)
    if alg == "HS256":
        path = out + ".secret"
        _write(path, base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=") + b"\n",
               0o600)
        return [path]
    if alg == "ES256":
        key = ec.generate_private_key(ec.SECP256R1())
    elif alg == "RS256":
        key = rsa.generate_private_key(public_exponent=65537, key_size=3072)
    else:
        raise SystemExit(f"keygen: {alg}: not ES256, RS256 or HS256")
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    pub = key.public_key()
    _write(out + ".key", pem, 0o600)
    _write(out + ".pub", pub.public_bytes(serialization.Encoding.PEM,
                                          serialization.PublicFormat.SubjectPublicKeyInfo), 0o644)
    _write(out + ".jwks.json", (json.dumps({"keys": [public_jwk(pub, alg, kid)]}, indent=2) +
                                "\n").encode(), 0o644)
    return [out + ".key", out + ".pub", out + ".jwks.json"]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m warrant keygen",
                                 description="a decider's key pair (warrantd(7) §3.2)")
    ap.add_argument("--alg", default="ES256", choices=("ES256", "RS256", "HS256"))
    ap.add_argument("--kid", help="key id (default: 16 random hex digits)")
    ap.add_argument("--out", default="decider", help="path prefix (default: decider)")
    a = ap.parse_args(argv)
    try:
        paths = keygen(a.out, a.alg, a.kid)
    except FileExistsError as e:
        print(f"keygen: {e.filename} exists: not overwritten", file=sys.stderr)
        return 1
    for p in paths:
        print(p)
    return 0

# SPDX-License-Identifier: BSD-2-Clause
import json
import os
import stat
import subprocess
import sys

import pytest
from cryptography.hazmat.primitives import hashes, hmac, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from conftest import DATA
from warrant import KeyFileError, Signer
from warrant.jws import b64u_decode
from warrant.keygen import keygen


def parts(jws):
    h, p, s = jws.split(".")
    return json.loads(b64u_decode(h)), b64u_decode(p), b64u_decode(s), (h + "." + p).encode()


def test_es256_verifies_with_the_public_key():
    s = Signer.from_file("ES256", os.path.join(DATA, "test-es256.key"), "k1")
    head, payload, sig, inp = parts(s.sign(b'{"a":1}'))
    assert head == {"alg": "ES256", "typ": "decision+jwt", "kid": "k1"}
    assert payload == b'{"a":1}' and len(sig) == 64
    with open(os.path.join(DATA, "test-es256.pub"), "rb") as f:
        pub = serialization.load_pem_public_key(f.read())
    der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
    pub.verify(der, inp, ec.ECDSA(hashes.SHA256()))


def test_rs256_and_hs256():
    s = Signer.from_file("RS256", os.path.join(DATA, "test-rs256.key"))
    head, _, sig, inp = parts(s.sign(b"{}"))
    assert head == {"alg": "RS256", "typ": "decision+jwt"}
    with open(os.path.join(DATA, "test-rs256.pub"), "rb") as f:
        serialization.load_pem_public_key(f.read()).verify(sig, inp, padding.PKCS1v15(),
                                                           hashes.SHA256())
    s = Signer.from_file("HS256", os.path.join(DATA, "test-hs256.secret"))
    _, _, sig, inp = parts(s.sign(b"{}"))
    with open(os.path.join(DATA, "test-hs256.secret"), "rb") as f:
        h = hmac.HMAC(f.read().strip(), hashes.SHA256())
    h.update(inp)
    h.verify(sig)


def test_wrong_key_kinds_are_refused():
    with pytest.raises(KeyFileError):
        Signer.from_file("ES256", os.path.join(DATA, "test-rs256.key"))
    with pytest.raises(KeyFileError):
        Signer.from_file("HS256", os.path.join(DATA, "test-es256.key"))   # a PEM as a secret


def test_exposed_key_file_refused(tmp_path):
    p = tmp_path / "k.key"
    p.write_bytes(open(os.path.join(DATA, "test-es256.key"), "rb").read())
    p.chmod(0o644)
    with pytest.raises(KeyFileError):
        Signer.from_file("ES256", str(p))


def test_keygen_and_a_jwks_by_kid(tmp_path):
    out = str(tmp_path / "d")
    paths = keygen(out, "ES256", "k9")
    assert stat.S_IMODE(os.stat(out + ".key").st_mode) == 0o600
    jwk = json.load(open(out + ".jwks.json"))["keys"][0]
    assert jwk["kid"] == "k9" and jwk["alg"] == "ES256" and jwk["use"] == "sig" and "d" not in jwk
    assert len(paths) == 3
    with pytest.raises(FileExistsError):
        keygen(out, "ES256", "k9")
    s = Signer.from_file("ES256", out + ".key", "k9")
    assert parts(s.sign(b"{}"))[0]["kid"] == "k9"
    # the command
    r = subprocess.run([sys.executable, "-m", "warrant", "keygen", "--alg", "HS256", "--out",
                        str(tmp_path / "h")], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(str(tmp_path / "h.secret")).st_mode) == 0o600
    Signer.from_file("HS256", str(tmp_path / "h.secret"))


def test_private_jwks_picks_by_kid(tmp_path):
    from cryptography.hazmat.primitives.asymmetric import ec as _ec
    from warrant.jws import b64u
    keys = []
    for kid in ("old", "new"):
        k = _ec.generate_private_key(_ec.SECP256R1())
        n = k.private_numbers()
        keys.append({"kty": "EC", "crv": "P-256", "kid": kid,
                     "x": b64u(n.public_numbers.x.to_bytes(32, "big")).decode(),
                     "y": b64u(n.public_numbers.y.to_bytes(32, "big")).decode(),
                     "d": b64u(n.private_value.to_bytes(32, "big")).decode()})
    p = tmp_path / "set.json"
    p.write_text(json.dumps({"keys": keys}))
    p.chmod(0o600)
    assert Signer.from_file("ES256", str(p), "new").kid == "new"
    with pytest.raises(KeyFileError):
        Signer.from_file("ES256", str(p))          # several keys: name one
    with pytest.raises(KeyFileError):
        Signer.from_file("ES256", str(p), "gone")

# SPDX-License-Identifier: BSD-2-Clause
"""[redis] allow_hosts and the clear-text rule (issue 37 items 1, 2): the
shared cases of tests/data/allow_hosts.json, and a refusal made before any
TCP connection is opened."""
import datetime as dt
import json
import os
import socket

import pytest
from redis.exceptions import RedisClusterException

from conftest import DATA
from warrant import Decider, Settings
from warrant.errors import ConfigError
from warrant.hosts import AllowList, cleartext_ok

KEY = os.path.join(DATA, "test-es256.key")
ARGS = ("operator:4417", "gate.open", "gates/7", {"duration_s": 30}, "ticket:1")
with open(os.path.join(DATA, "allow_hosts.json"), encoding="utf-8") as f:
    V = json.load(f)


def test_shared_vectors():
    n = 0
    for m in V["match"]:
        a = AllowList.parse(m["list"])
        for host, port, want in m["cases"]:
            assert a.match(host, port) is want, (m["list"], host, port)
            n += 1
    for bad in V["invalid"]:
        with pytest.raises(ConfigError):
            AllowList.parse(bad)
        n += 1
    for d in V["default"]:
        a = AllowList.exact(d["hosts"])
        for host, port, want in d["cases"]:
            assert a.match(host, port) is want, ("default", host, port)
            n += 1
    for host, unix, tls, plain, want in V["cleartext"]:
        assert cleartext_ok(host, unix, tls, plain) is want, host
        n += 1
    assert n > 80


def _decider(**kw):
    s = dict(issuer="d.test", actions=["gate.open"])
    s.update(kw)
    return Decider(settings=Settings(**s), key_file=KEY, kid="k1")


def test_host_refused_before_connect():
    """A listener of the test's own at the configured host:port, which
    allow_hosts does not admit: refused, and the listener never sees a
    connection."""
    with socket.socket() as ls:
        ls.bind(("127.0.0.1", 0))
        ls.listen(4)
        port = ls.getsockname()[1]
        d = _decider(host="127.0.0.1", port=port, allow_hosts=f"127.0.0.1:{port + 1}")
        with pytest.raises(ConfigError, match="allow_hosts"):
            d.decide(*ARGS, expires_at=dt.timedelta(hours=1))
        ls.setblocking(False)
        with pytest.raises(BlockingIOError):
            ls.accept()


def test_cleartext_refused_before_connect(monkeypatch):
    """A password for a host beyond loopback without TLS: refused before a
    name is looked up or a socket opened; with allow_plaintext or TLS it is
    not this rule that stops it."""
    tried = []

    def no_net(*a, **k):
        tried.append(a)
        raise OSError("no network in this test")
    monkeypatch.setattr(socket, "getaddrinfo", no_net)
    monkeypatch.setattr(socket, "create_connection", no_net)
    d = _decider(host="10.9.8.7", port=6379, password="s3cret")
    with pytest.raises(ConfigError, match="clear text"):
        d.decide(*ARGS, expires_at=dt.timedelta(hours=1))
    assert tried == []
    d = _decider(host="10.9.8.7", port=6379, password="s3cret", allow_plaintext=True)
    with pytest.raises(Exception) as e:
        d.decide(*ARGS, expires_at=dt.timedelta(hours=1))
    assert "clear text" not in str(e.value) and tried


def test_cluster_seed_refused(cluster_port):
    with pytest.raises(ConfigError, match="allow_hosts"):
        _decider(cluster=[("127.0.0.1", cluster_port)], shards=3,
                 allow_hosts="127.0.0.1:1").decide(*ARGS, expires_at=dt.timedelta(hours=1))


def test_config_keys(tmp_path):
    p = tmp_path / "w.ini"
    p.write_text("[redis]\nhost = 10.0.0.5\nallow_hosts = 10.0.0.0/24:6379\n"
                 "allow_plaintext = yes\n")
    from warrant.config import load
    s = load(str(p))
    assert s.allow_plaintext is True and s.allow_hosts.match("10.0.0.9", 6379)
    p.write_text("[redis]\nallow_hosts = 10.0.0.0/33\n")
    with pytest.raises(ConfigError):
        load(str(p))


def test_cluster_default_admits_what_the_seed_announces(cluster_port):
    """The seed by name ("localhost"), the node announcing 127.0.0.1: under
    the default that address is admitted because the seed announces it
    (CLUSTER SHARDS); a list naming only the seed refuses it."""
    d = _decider(cluster=[("localhost", cluster_port)], shards=3)
    assert d.decide(*ARGS, expires_at=dt.timedelta(hours=1))
    d.close()
    d = _decider(cluster=[("localhost", cluster_port)], shards=3,
                 allow_hosts=f"localhost:{cluster_port}")
    # redis-py wraps it when it arises in its own discovery
    with pytest.raises((ConfigError, RedisClusterException), match="allow_hosts: 127.0.0.1:"):
        d.decide(*ARGS, expires_at=dt.timedelta(hours=1))

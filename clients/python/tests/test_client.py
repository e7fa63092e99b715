# SPDX-License-Identifier: BSD-2-Clause
"""Decider against a private redis-server: what it writes, where, as whom."""
import datetime as dt
import os
import re

import pytest
import redis

from conftest import DATA, ROOT
from warrant import (Decider, NotPermittedError, RecordError, RecordExistsError, Settings,
                     WaitTimeout, shard_of)
from warrant.jws import payload_of
from warrant.record import parse_time

NOW = parse_time("2026-12-07T16:00:00Z")
KEY = os.path.join(DATA, "test-es256.key")
ARGS = ("operator:4417", "gate.open", "gates/7", {"duration_s": 30}, "ticket:1")


def decider(sock, clock=lambda: NOW, **kw):
    s = dict(socket=sock, issuer="d.test", actions=["gate.open"])
    s.update(kw.pop("settings", {}))
    return Decider(settings=Settings(**s), key_file=KEY, kid="k1", clock=clock, **kw)


def test_writes_hash_and_entry(redis_sock, rconn):
    d = decider(redis_sock)
    rid = d.decide(*ARGS, expires_at=dt.timedelta(hours=12))
    h = rconn.hgetall(f"warrant:decision:{rid}")
    assert h["state"] == "queued" and h["createdAt"] == "2026-12-07T16:00:00.000Z"
    assert payload_of(h["record"]).startswith(b'{"recordId":"%s",' % rid.encode())
    (sid, fields), = rconn.xrange("warrant:jobs")
    assert fields == {"id": rid}
    assert d.status(rid) == {"state": "queued", "createdAt": "2026-12-07T16:00:00.000Z"}
    assert d.status("nope") is None


def test_not_before_in_the_future_is_scheduled(redis_sock, rconn):
    d = decider(redis_sock, clock=lambda: parse_time("2099-01-01T00:00:00Z"))
    rid = d.decide(*ARGS, expires_at=dt.timedelta(hours=12), not_before=dt.timedelta(hours=1))
    assert rconn.zscore("warrant:scheduled", rid) == parse_time("2099-01-01T01:00:00Z")
    assert not rconn.exists("warrant:jobs")
    with pytest.raises(RecordError) as e:
        d.decide(*ARGS, expires_at=dt.timedelta(hours=12), not_before=dt.timedelta(hours=1),
                 traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    assert e.value.field == "traceparent"


def test_traceparent_goes_into_the_entry(redis_sock, rconn):
    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    rid = decider(redis_sock).decide(*ARGS, expires_at=dt.timedelta(hours=1), traceparent=tp)
    assert rconn.xrange("warrant:jobs")[0][1] == {"id": rid, "traceparent": tp}
    with pytest.raises(RecordError):
        decider(redis_sock).decide(*ARGS, expires_at=dt.timedelta(hours=1), traceparent="00-x")


def test_a_record_id_is_never_reused(redis_sock, rconn):
    d = decider(redis_sock)
    assert d.decide(*ARGS, expires_at=dt.timedelta(hours=1), record_id="chg-1") == "chg-1"
    with pytest.raises(RecordExistsError):
        d.decide(*ARGS, expires_at=dt.timedelta(hours=2), record_id="chg-1")
    assert rconn.xlen("warrant:jobs") == 1
    assert b'"expiresAt":"2026-12-07T17:00:00.000Z"' in payload_of(
        rconn.hget("warrant:decision:chg-1", "record"))


def test_refused_input_writes_nothing(redis_sock, rconn):
    with pytest.raises(RecordError):
        decider(redis_sock).decide("op", "gate.open", "gates/../x", {}, "b",
                                   expires_at=dt.timedelta(hours=1))
    assert rconn.dbsize() == 0


def test_max_bytes(redis_sock, rconn):
    d = decider(redis_sock, settings=dict(max_bytes=600))
    with pytest.raises(RecordError) as e:
        d.decide(*ARGS[:3], {"p": "x" * 400}, "b", expires_at=dt.timedelta(hours=1))
    assert e.value.field == "record"


def test_shards(redis_sock, rconn):
    d = decider(redis_sock, settings=dict(shards=2))
    ids = [d.decide(*ARGS, expires_at=dt.timedelta(hours=1)) for _ in range(20)]
    for rid in ids:
        s = shard_of(rid, 2)
        assert rconn.exists(f"{{warrant:{s}}}:decision:{rid}")
    assert rconn.xlen("{warrant:0}:jobs") + rconn.xlen("{warrant:1}:jobs") == 20
    assert 0 < rconn.xlen("{warrant:0}:jobs") < 20


def test_decide_many(redis_sock, rconn):
    d = decider(redis_sock, settings=dict(shards=3))
    ids = d.decide_many([dict(subject="s", action="gate.open", resource=f"gates/{i}",
                              parameters={}, basis="b", expires_at=dt.timedelta(hours=1))
                         for i in range(50)])
    assert len(set(ids)) == 50
    assert sum(rconn.xlen(f"{{warrant:{i}}}:jobs") for i in range(3)) == 50
    with pytest.raises(RecordError):      # one bad record: nothing written
        d.decide_many([dict(subject="s", action="gate.open", resource="ok", parameters={},
                            basis="b", expires_at=dt.timedelta(hours=1)),
                       dict(subject="s", action="gate.open", resource="", parameters={},
                            basis="b", expires_at=dt.timedelta(hours=1))])
    assert sum(rconn.xlen(f"{{warrant:{i}}}:jobs") for i in range(3)) == 50


def test_wait(redis_sock, rconn):
    d = decider(redis_sock)
    rid = d.decide(*ARGS, expires_at=dt.timedelta(hours=1))
    with pytest.raises(WaitTimeout) as e:
        d.wait(rid, 0.05)
    assert e.value.status["state"] == "queued"
    rconn.hset(f"warrant:decision:{rid}", "state", "done")
    assert d.wait(rid, 5)["state"] == "done"
    with pytest.raises(NotPermittedError):
        d.cancel(rid)
    with pytest.raises(NotPermittedError):
        d.retry(rid)


def test_as_the_decider_acl_user(redis_sock, rconn, tmp_path):
    """conf/redis-acl.conf's decider: plain commands under MULTI/EXEC, no script."""
    with open(os.path.join(ROOT, "conf", "redis-acl.conf")) as f:
        line = next(x for x in f if x.startswith("user decider "))
    toks = re.findall(r"\([^)]*\)|\S+", line.split(None, 2)[2])
    toks = [t for t in toks if t != "+eval"]            # no scripts needed
    rconn.execute_command("ACL", "SETUSER", "decider", *toks, ">pw")
    pw = tmp_path / "pw"
    pw.write_text("pw\n")
    ini = tmp_path / "w.ini"
    ini.write_text(f"[redis]\nsocket = {redis_sock}\n[redis.decider]\nusername = decider\n"
                   f"password_file = pw\n[records]\nissuer = d.test\n[action gate.open]\n"
                   "url = http://x/{resource}\n")
    d = Decider(str(ini), key_file=KEY, clock=lambda: NOW)
    rid = d.decide(*ARGS, expires_at=dt.timedelta(hours=1))
    d.decide(*ARGS, expires_at=dt.timedelta(hours=1), record_id="fixed")
    with pytest.raises(RecordExistsError):
        d.decide(*ARGS, expires_at=dt.timedelta(hours=1), record_id="fixed")
    assert rconn.hget(f"warrant:decision:{rid}", "state") == "queued"
    with pytest.raises(redis.exceptions.NoPermissionError):
        d.status(rid)                     # reading is the monitor's
    with pytest.raises(RecordError) as e:
        d.decide(*ARGS[:1], "gate.close", *ARGS[2:], expires_at=dt.timedelta(hours=1))
    assert e.value.code == "unknown-action"
    d.close()


def test_an_error_reply_keeps_the_connection_in_step(redis_sock, rconn):
    rconn.execute_command("ACL", "SETUSER", "weak", "on", ">pw", "~*", "+multi", "+exec", "+hset")
    d = decider(redis_sock, settings=dict(username="weak", password="pw"))
    for _ in range(3):       # XADD refused: EXECABORT, every time, nothing written
        with pytest.raises(redis.exceptions.ResponseError):
            d.decide(*ARGS, expires_at=dt.timedelta(hours=1))
    assert rconn.dbsize() == 0
    rconn.execute_command("ACL", "SETUSER", "weak", "+xadd")
    rid = d.decide(*ARGS, expires_at=dt.timedelta(hours=1))
    assert rconn.hget(f"warrant:decision:{rid}", "state") == "queued"
    d.close()


def test_cluster(cluster_port):
    """[redis] cluster: each shard's transaction on the node owning its slot."""
    d = Decider(settings=Settings(cluster=[("127.0.0.1", cluster_port)], shards=3, issuer="d",
                                  actions=["gate.open"]), key_file=KEY, clock=lambda: NOW)
    ids = [d.decide(*ARGS, expires_at=dt.timedelta(hours=1)) for _ in range(12)]
    ids.append(d.decide(*ARGS, expires_at=dt.timedelta(hours=1), record_id="cl-1"))
    with pytest.raises(RecordExistsError):
        d.decide(*ARGS, expires_at=dt.timedelta(hours=1), record_id="cl-1")
    ids += d.decide_many([dict(subject="s", action="gate.open", resource="g", parameters={},
                               basis="b", expires_at=dt.timedelta(hours=1))] * 6)
    r = redis.Redis(port=cluster_port, decode_responses=True)
    for rid in ids:
        assert r.hget(f"{{warrant:{shard_of(rid, 3)}}}:decision:{rid}", "state") == "queued"
    assert sum(r.xlen(f"{{warrant:{s}}}:jobs") for s in range(3)) == len(ids)
    assert d.status(ids[0])["state"] == "queued"
    d.close()

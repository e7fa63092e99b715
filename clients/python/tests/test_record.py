# SPDX-License-Identifier: BSD-2-Clause
"""The checks of record.build against src/record.c's rules (warrantd(7) §3.1)."""
import datetime as dt

import pytest

from warrant import UnknownActionError, fnv1a32, shard_of
from warrant.errors import RecordError
from warrant.record import Policy, build, dumps, fmt_time, id_valid, new_id, parse_time

NOW = parse_time("2026-12-07T16:00:00Z")
POL = Policy(actions=["gate.open"], issuer="d.test")
OK = dict(subject="operator:4417", action="gate.open", resource="gates/7",
          parameters={"duration_s": 30}, basis="ticket:1", expires_at=dt.timedelta(hours=12))


def rec(**over):
    a = dict(OK, **over)
    return build(POL, over.pop("iss", "d.test"), a["subject"], a["action"], a["resource"],
                 a["parameters"], a["basis"], a["expires_at"], NOW, a.get("not_before"),
                 a.get("notify"), a.get("record_id"))


def test_fnv1a_vectors_of_the_manual():
    assert fnv1a32(b"") == 0x811C9DC5
    assert fnv1a32(b"a") == 0xE40C292C
    assert fnv1a32(b"foobar") == 0xBF9CF968
    assert shard_of("foobar", 6) == 4 and shard_of("foobar", 4) == 0 and shard_of("x", 0) == 0


def test_member_order_and_times():
    r, nbf = rec(not_before=dt.timedelta(hours=12) - dt.timedelta(hours=1), notify="ops",
                 record_id="r1")
    assert list(r) == ["recordId", "onBehalfOf", "action", "resource", "parameters", "basis",
                       "decidedAt", "notBefore", "expiresAt", "notifyOnDenial", "iss"]
    assert r["decidedAt"] == "2026-12-07T16:00:00.000Z"
    assert r["expiresAt"] == "2026-12-08T04:00:00.000Z"
    assert nbf == NOW + 11 * 3600 * 1000


def test_ids():
    for _ in range(100):
        i = new_id()
        assert len(i) == 26 and id_valid(i)
    assert not id_valid(".") and not id_valid("..") and not id_valid("a/b") and not id_valid("x" * 65)
    assert id_valid("x" * 64) and id_valid("a.b_c-D9")


@pytest.mark.parametrize("field,over", [
    ("recordId", dict(record_id="a b")), ("recordId", dict(record_id="..")),
    ("onBehalfOf", dict(subject="")), ("onBehalfOf", dict(subject="a\x7fb")),
    ("onBehalfOf", dict(subject="é" * 513)),
    ("action", dict(action="")), ("action", dict(action="*")),
    ("resource", dict(resource="")), ("resource", dict(resource="a/./b")),
    ("resource", dict(resource="a/")), ("resource", dict(resource="a\\b")),
    ("resource", dict(resource="a/*")), ("resource", dict(resource="a\x00")),
    ("parameters", dict(parameters=None)), ("parameters", dict(parameters=[])),
    ("basis", dict(basis="")), ("basis", dict(basis="x\n")),
    ("expiresAt", dict(expires_at=dt.timedelta(0))),
    ("expiresAt", dict(expires_at=dt.timedelta(days=7, seconds=1))),
    ("expiresAt", dict(expires_at="2026-12-08 04:00:00")),
    ("expiresAt", dict(expires_at=dt.datetime(2026, 12, 8))),
    ("notBefore", dict(not_before=dt.timedelta(hours=12))),
    ("iss", dict(iss="other")),
])
def test_refused_naming_the_field(field, over):
    with pytest.raises(RecordError) as e:
        rec(**over)
    assert e.value.field == field
    assert e.value.code == "record-invalid"


def test_window_edge_and_sizes():
    rec(expires_at=dt.timedelta(days=7))              # exactly max_window_s
    rec(subject="é" * 512, basis="b" * 1024)          # 1024 bytes each


def test_unknown_action_is_last():
    with pytest.raises(UnknownActionError) as e:
        rec(action="gate.close")
    assert e.value.code == "unknown-action"
    with pytest.raises(RecordError) as e:           # also malformed: record-invalid
        rec(action="gate.close", resource="..")
    assert not isinstance(e.value, UnknownActionError)


def test_json_as_jansson_writes_it():
    assert dumps({"a": "x\x01\x1f\x7f\"\\/é", "n": -3, "f": 0.1, "g": 1e300, "h": 1.5e-7,
                  "i": 2.0, "b": [True, False, None], "o": {}}) == (
        '{"a":"x\\u0001\\u001F\x7f\\"\\\\/é","n":-3,"f":0.10000000000000001,'
        '"g":1.0000000000000001e300,"h":1.4999999999999999e-7,"i":2.0,"b":[true,false,null],"o":{}}')
    with pytest.raises(RecordError):
        dumps({"x": float("nan")})
    with pytest.raises(RecordError):
        dumps({"x": object()})
    with pytest.raises(RecordError):
        dumps({"x": "\ud800"})


def test_fmt_time():
    assert fmt_time(0) == "1970-01-01T00:00:00.000Z"
    assert fmt_time(parse_time("2026-02-28T23:59:59.5Z")) == "2026-02-28T23:59:59.500Z"


def test_fast_json_path_equals_dumps():
    from warrant.record import payload_bytes
    r, _ = rec(parameters={"a": "x\x01\x1f\\u00ab\\\x02", "é": ["\n", {"k": None, "n": 3}],
                           "t": True})
    assert payload_bytes(r) == dumps(r).encode()
    r, _ = rec(parameters={"f": 0.5})
    assert payload_bytes(r) == dumps(r).encode() and b'"f":0.5' in payload_bytes(r)
    r, _ = rec(parameters={"s": "\udc00"})
    with pytest.raises(RecordError):
        payload_bytes(r)


def test_audience_sets_aud_last():
    """warrantd(7) §3.1, issue 37 item 7: the record is bound to a deployment."""
    a = dict(OK)
    r, _ = build(POL, "d.test", a["subject"], a["action"], a["resource"], a["parameters"],
                 a["basis"], a["expires_at"], NOW, aud="canal-prod")
    assert list(r)[-2:] == ["iss", "aud"] and r["aud"] == "canal-prod"
    r, _ = rec()
    assert "aud" not in r
    with pytest.raises(RecordError) as e:
        build(POL, "d.test", a["subject"], a["action"], a["resource"], a["parameters"],
              a["basis"], a["expires_at"], NOW, aud=7)
    assert e.value.field == "aud"


def test_decider_audience_from_settings_and_parameter():
    from warrant import ConfigError, Decider, Settings
    s = Settings(signature=False, issuer="d.test", audience="canal-prod", actions=["gate.open"])
    text = Decider(settings=s).prepare(OK["subject"], "gate.open", "gates/7", {}, "b",
                                       dt.timedelta(hours=1))[2]
    assert text.endswith('"iss":"d.test","aud":"canal-prod"}')
    with pytest.raises(ConfigError):
        Decider(settings=s, audience="canal-test")
    with pytest.raises(RecordError):
        Decider(settings=s).prepare(OK["subject"], "gate.open", "gates/7", {}, "b",
                                    dt.timedelta(hours=1), audience="canal-test")
    s = Settings(signature=False, issuer="d.test", actions=["gate.open"])
    text = Decider(settings=s, audience="canal-dev").prepare(
        OK["subject"], "gate.open", "gates/7", {}, "b", dt.timedelta(hours=1))[2]
    assert text.endswith('"aud":"canal-dev"}')

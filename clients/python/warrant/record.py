# SPDX-License-Identifier: BSD-2-Clause
"""The decision record of warrantd(7) §3.1: built, and checked exactly as the
worker checks it (src/record.c, cited per check), before anything is signed.
Pure: `now` is an argument."""

import datetime as _dt
import json
import os
import re
import time

from .errors import RecordError, UnknownActionError

TEXT_FIELD_MAX = 1024            # record.c TEXT_FIELD_MAX (onBehalfOf, basis)
RECORD_ID_MAX = 64               # record.h RECORD_ID_MAX
ID_LEN = 26                      # ctl.h CTL_ID_LEN
_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
_ID_RE = re.compile(r"[A-Za-z0-9._-]{1,64}\Z")
_TRACE_RE = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}\Z")
TERMINAL = frozenset(("done", "expired", "denied", "failed", "dead", "cancelled"))


_ID_TABLE = bytes(ord(_ID_ALPHABET[b & 31]) for b in range(256))


def new_id():
    """26 random base32 characters (ctl_make_id: each byte's low 5 bits, and
    256 is a multiple of 32): 130 bits, never a dot segment."""
    return os.urandom(ID_LEN).translate(_ID_TABLE).decode("ascii")


_last_time = [None, None]


def fmt_time(ms):
    """RFC 3339 UTC with milliseconds, as wtime_format_rfc3339."""
    if _last_time[0] == ms:
        return _last_time[1]
    secs, frac = divmod(int(ms), 1000)
    t = time.gmtime(secs)
    out = "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (
        t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, frac)
    _last_time[0], _last_time[1] = ms, out
    return out


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?Z\Z")


def parse_time(s):
    m = _RFC3339.match(s)
    if not m:
        raise ValueError(s)
    y, mo, d, h, mi, se, frac = m.groups()
    t = _dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(se), tzinfo=_dt.timezone.utc)
    ms = int(t.timestamp()) * 1000
    if frac:
        ms += int((frac + "00")[:3])
    return ms


def to_ms(field, value, now_ms):
    """A time argument: an aware datetime, epoch milliseconds (int), an RFC 3339
    UTC string, or a timedelta from now."""
    if isinstance(value, bool):
        raise RecordError(field, "not a time")
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.timedelta):
        return now_ms + int(value / _dt.timedelta(milliseconds=1))
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise RecordError(field, "a naive datetime: give one with a time zone")
        return int(value.timestamp() * 1000) if value.microsecond % 1000 == 0 else \
            int(value.timestamp()) * 1000 + value.microsecond // 1000
    if isinstance(value, str):
        try:
            return parse_time(value)
        except (ValueError, OverflowError):
            raise RecordError(field, "not an RFC 3339 time in UTC (YYYY-MM-DDTHH:MM:SS[.frac]Z)") from None
    raise RecordError(field, "not a time")


def _control(b):
    return b < 0x20 or b == 0x7F   # record.c control_char


_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")


def _utf8(field, s):
    if not isinstance(s, str):
        raise RecordError(field, "not a string")
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        raise RecordError(field, "not valid UTF-8") from None


def _need(field, s):
    b = _utf8(field, s)
    if not b:
        raise RecordError(field, "empty")          # record.c need_string
    return b


def _text(field, s):
    b = _need(field, s)
    if len(b) > TEXT_FIELD_MAX or _CONTROL.search(b):   # text_field_ok
        raise RecordError(field, "longer than 1024 bytes or has a control character")


def id_valid(record_id):
    """record_id_valid: 1-64 of [A-Za-z0-9._-], neither '.' nor '..'."""
    return isinstance(record_id, str) and bool(_ID_RE.match(record_id)) and \
        record_id not in (".", "..")


def resource_problem(r):
    """record.c resource_problem: None when valid, else the rule broken."""
    if "\\" in r or any(_control(ord(c)) for c in r if ord(c) < 0x80):
        return "contains '\\' or a control character"
    for seg in r.split("/"):
        if seg in ("", "*", ".", ".."):
            return "a segment between '/' is empty, '*', '.' or '..'"
    return None


def check_traceparent(tp):
    """trace_parse: W3C Trace Context, lower-case hex, ids not all zero."""
    if not isinstance(tp, str) or not _TRACE_RE.match(tp) or tp[:2] == "ff" or \
            tp[:2] != "00" or set(tp[3:35]) == {"0"} or set(tp[36:52]) == {"0"}:
        raise RecordError("traceparent", "not a W3C traceparent")
    return tp


class Policy:
    """What the worker checks against ([records] of warrantd.ini(5))."""

    def __init__(self, max_window_s=604800, clock_skew_s=60, max_bytes=16384, issuer=None,
                 actions=None):
        self.max_window_ms = int(max_window_s) * 1000
        self.clock_skew_ms = int(clock_skew_s) * 1000
        self.max_bytes = int(max_bytes)
        self.issuer = issuer
        self.actions = frozenset(actions) if actions is not None else None


def build(policy, iss, subject, action, resource, parameters, basis, expires_at, now_ms,
          not_before=None, notify=None, record_id=None, aud=None):
    """The checked payload as a dict in the worker's member order (the order
    `warrantctl decide` writes: ctl.c fill_record). Raises RecordError."""
    if record_id is None:
        record_id = new_id()
    if not id_valid(record_id):
        raise RecordError("recordId", "not 1-64 of [A-Za-z0-9._-], or '.' or '..'")
    _text("onBehalfOf", subject)
    _need("action", action)
    if "*" in action:
        raise RecordError("action", "contains '*'")
    _need("resource", resource)
    why = resource_problem(resource)
    if why:
        raise RecordError("resource", why)
    if not isinstance(parameters, dict):
        raise RecordError("parameters", "not an object")
    _text("basis", basis)
    exp = to_ms("expiresAt", expires_at, now_ms)
    nbf = to_ms("notBefore", not_before, now_ms) if not_before is not None else 0
    if now_ms <= 0 or exp <= 0 or nbf < 0:
        raise RecordError("decidedAt", "a time is before 1970")
    if exp <= now_ms:
        raise RecordError("expiresAt", "not later than decidedAt")
    if exp - now_ms > policy.max_window_ms:
        raise RecordError("expiresAt", "more than max_window_s after decidedAt")
    if nbf and nbf >= exp:       # ctl.c check_decision: such a job could never run
        raise RecordError("notBefore", "not before expiresAt")
    if notify is not None:
        _utf8("notifyOnDenial", notify)
    if iss is None:
        raise RecordError("iss", "missing: set [records] issuer or issuer=")
    _utf8("iss", iss)
    if policy.issuer is not None and iss != policy.issuer:
        raise RecordError("iss", "not the configured issuer")
    rec = {"recordId": record_id, "onBehalfOf": subject, "action": action,
           "resource": resource, "parameters": parameters, "basis": basis,
           "decidedAt": fmt_time(now_ms)}
    if nbf:
        rec["notBefore"] = fmt_time(nbf)
    rec["expiresAt"] = fmt_time(exp)
    if notify is not None:
        rec["notifyOnDenial"] = notify
    rec["iss"] = iss
    if aud is not None:          # warrantd(7) §3.1: the deployment it is for
        _utf8("aud", aud)
        rec["aud"] = aud
    # Last, as record_check_action: a record also malformed is record-invalid.
    if policy.actions is not None and action not in policy.actions:
        raise UnknownActionError("action", f"no [action {action[:64]}] configured")
    return rec, nbf


# ---- JSON exactly as jansson's json_dumps(JSON_COMPACT) writes it ----

_ESC = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
        "\t": "\\t"}
_NEEDS = re.compile(r'["\\\x00-\x1f]')


def _str(s):
    return '"' + _NEEDS.sub(lambda m: _ESC.get(m.group(), "\\u%04X" % ord(m.group())), s) + '"'


def dumps(v, field="parameters"):
    if isinstance(v, str):
        _utf8(field, v)
        return _str(v)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise RecordError(field, "not a finite number")
        return _jreal(v)
    if isinstance(v, dict):
        parts = []
        for k, x in v.items():
            if not isinstance(k, str):
                raise RecordError(field, "a key is not a string")
            parts.append(_str(k) + ":" + dumps(x, field))
        return "{" + ",".join(parts) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(dumps(x, field) for x in v) + "]"
    raise RecordError(field, f"a {type(v).__name__} is not JSON")


def _jreal(v):
    # jansson's jsonp_dtostr: "%.17g", the exponent without '+' or leading
    # zeros, and ".0" added when it reads as an integer
    s = "%.17g" % v
    if "e" in s:
        m, e = s.split("e")
        s = m + "e" + ("-" if e[0] == "-" else "") + (e.lstrip("+-").lstrip("0") or "0")
    elif "." not in s:
        s += ".0"
    return s


def _plain(v):
    """No float anywhere (json's repr of a float is not jansson's %.17g)."""
    if isinstance(v, dict):
        return all(_plain(x) for x in v.values())
    if isinstance(v, list):
        return all(_plain(x) for x in v)
    return v is None or isinstance(v, (str, int))


_LOWER_U = re.compile(r"(\\\\)|\\u00([0-9a-f]{2})")


def payload_bytes(rec):
    """The payload's bytes, as jansson writes them. The fast path is the json
    module's C encoder, its lower-case \\u00xx made upper case as jansson's;
    a float anywhere takes dumps()."""
    if not _plain(rec["parameters"]):
        return dumps(rec, "record").encode("utf-8")
    try:
        s = json.dumps(rec, ensure_ascii=False, separators=(",", ":"), check_circular=False)
    except (TypeError, ValueError):
        return dumps(rec, "record").encode("utf-8")       # raises the typed error
    if "\\u00" in s:
        s = _LOWER_U.sub(lambda m: m.group(1) or "\\u00" + m.group(2).upper(), s)
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        raise RecordError("parameters", "not valid UTF-8") from None

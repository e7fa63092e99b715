#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""One contract, three writers (issue 40 item 2).

    conformance.py BUILD_DIR [--shards N]

Starts a private redis-server on a unix socket (the decider and monitor ACL
users of conf/redis-acl.conf, with passwords), the fake target of
tests/fakes and the real warrantd, then for `warrantctl decide`, the Python
library (clients/python) and the Node library (clients/node):
  1. the same valid inputs, a fixed clock and id: byte-equal payloads (ES256),
     and with RS256 and HS256, which sign deterministically, byte-equal records;
  2. each writer writes them under its own ids: every record verifies with
     jose (an independent verifier) and the worker runs every one to done;
  3. the same invalid inputs: every writer refuses each (the libraries name
     the field), writes nothing, and the same record forged past the checks
     and signed is one the worker dead-letters (or, notBefore >= expiresAt,
     never runs).
Every process is started and stopped by PID; every wait has a timeout."""

import argparse
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))

import redis  # noqa: E402

import warrant  # noqa: E402
from warrant.jws import Signer, payload_of  # noqa: E402
from warrant.record import fmt_time, payload_bytes  # noqa: E402

FAILS = []
PROCS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print(f"FAIL {what}", flush=True)
    return cond


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    pause = 0.01
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(pause)
        pause = min(pause * 2, 0.2)
    raise SystemExit(f"conformance: timed out waiting for {what}")


def spawn(argv, log, env=None):
    p = subprocess.Popen(argv, stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=env,
                         start_new_session=True)
    PROCS.append(p)
    return p


def stop_all():
    for p in reversed(PROCS):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def acl_args(name, shards):
    """conf/redis-acl.conf's line for user `name`, given a password; with
    shards its key patterns carry the shard's hash tag."""
    with open(os.path.join(ROOT, "conf", "redis-acl.conf")) as f:
        line = next(x for x in f if x.startswith(f"user {name} "))
    rest = line.split(None, 2)[2].strip()
    if shards:
        rest = rest.replace("~warrant:", "~{warrant:*}:")
    toks = re.findall(r"\([^)]*\)|\S+", rest)
    return ["ACL", "SETUSER", name] + toks + [f">{name}-pw"]


def secret(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def valid_cases(t0):
    at = lambda s: fmt_time(t0 + s * 1000)  # noqa: E731
    return [
        dict(subject="operator:4417", action="gate.open", resource="gates/7",
             parameters={"duration_s": 30}, basis="ticket:CHG-1182", expiresAt=at(3600)),
        dict(subject="usér:42", action="gate.open", resource="site-a/door.3/lock_2",
             parameters={"s": "é ü \"q\" \\ /", "ctl": "a\x1fb\x7f", "n": -12, "f": 0.1,
                         "big": 1e300, "small": -1.5e-7, "half": 0.5, "t": True, "z": None, "arr": [1, "x", {"k": []}], "o": {}},
             basis="b" * 1024, expiresAt=at(7200), notify="team:ops"),
        dict(subject="svc:billing", action="gate.open", resource="gates/9", parameters={},
             basis="rule:r1", expiresAt=at(3600), notBefore=at(3)),
        dict(subject="svc:billing", action="gate.open", resource="gates/10", parameters={"a": "1"},
             basis="rule:r2", expiresAt=at(600),
             traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
    ]


def invalid_cases(t0):
    """(name, the field named, the worker's verdict, the input)."""
    at = lambda s: fmt_time(t0 + s * 1000)  # noqa: E731
    base = valid_cases(t0)[0]
    out = []

    def case(name, field, verdict, **over):
        d = dict(base)
        d.update(over)
        out.append((name, field, verdict, d))

    case("id-slash", "recordId", "no-id", recordId="a/b")
    case("id-dotdot", "recordId", "no-id", recordId="..")
    case("id-long", "recordId", "no-id", recordId="x" * 65)
    case("subject-empty", "onBehalfOf", "record-invalid", subject="")
    case("subject-control", "onBehalfOf", "record-invalid", subject="op\x01:1")
    case("subject-long", "onBehalfOf", "record-invalid", subject="s" * 1025)
    case("action-wildcard", "action", "record-invalid", action="gate.*")
    case("action-unknown", "action", "unknown-action", action="gate.close")
    case("resource-dotdot", "resource", "record-invalid", resource="gates/../admin")
    case("resource-dot", "resource", "record-invalid", resource="./gates")
    case("resource-empty-seg", "resource", "record-invalid", resource="gates//7")
    case("resource-leading", "resource", "record-invalid", resource="/gates/7")
    case("resource-star", "resource", "record-invalid", resource="gates/*")
    case("resource-backslash", "resource", "record-invalid", resource="gates\\7")
    case("resource-newline", "resource", "record-invalid", resource="gates/7\n")
    case("parameters-array", "parameters", "record-invalid", parameters=[1])
    case("basis-empty", "basis", "record-invalid", basis="")
    case("basis-tab", "basis", "record-invalid", basis="a\tb")
    case("basis-long", "basis", "record-invalid", basis="b" * 1025)
    case("expires-now", "expiresAt", "record-invalid", expiresAt=at(0))
    case("expires-past", "expiresAt", "record-invalid", expiresAt=at(-60))
    case("window", "expiresAt", "record-invalid", expiresAt=at(8 * 86400))
    case("issuer", "iss", "record-invalid", issuer="someone.else")
    case("max-bytes", "record", "record-invalid", parameters={"p": "x" * 20000})
    case("not-before-after-expiry", "notBefore", "expired", notBefore=at(2), expiresAt=at(1))
    return out


def cli_argv(bin_dir, ini, key, kid, d, record_id):
    a = [os.path.join(bin_dir, "warrantctl"), "-c", ini, "decide", "--on-behalf-of", d["subject"],
         "--action", d["action"], "--resource", d["resource"],
         "--params", json.dumps(d["parameters"], ensure_ascii=False), "--basis", d["basis"],
         "--expires", d["expiresAt"], "--key", key, "--kid", kid]
    if record_id is not None:
        a += ["--id", record_id]
    for opt, k in (("--not-before", "notBefore"), ("--notify", "notify"),
                   ("--traceparent", "traceparent"), ("--issuer", "issuer")):
        if d.get(k) is not None:
            a += [opt, d[k]]
    return a


def run_cli(bin_dir, ini, key, kid, d, record_id, t0):
    env = dict(os.environ, TZ="UTC", LD_PRELOAD="/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
               FAKETIME=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0 // 1000)),
               FAKETIME_DONT_FAKE_MONOTONIC="1")
    return subprocess.run(cli_argv(bin_dir, ini, key, kid, d, record_id), env=env,
                          capture_output=True, text=True, timeout=30)


def py_args(d):
    return dict(subject=d["subject"], action=d["action"], resource=d["resource"],
                parameters=d["parameters"], basis=d["basis"], expires_at=d["expiresAt"],
                not_before=d.get("notBefore"), notify=d.get("notify"), record_id=d.get("recordId"),
                traceparent=d.get("traceparent"), issuer=d.get("issuer"))


def run_node(tmp, ini, key, kid, t0, cases, write):
    spec = os.path.join(tmp, "node-cases.json")
    with open(spec, "w") as f:
        json.dump({"config": ini, "keyFile": key, "kid": kid, "now": t0, "write": write,
                   "cases": cases}, f, ensure_ascii=False)
    r = subprocess.run(["node", os.path.join(ROOT, "tests", "conformance", "node_writer.mjs"),
                        "write", spec], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"conformance: node writer failed: {r.stderr}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--shards", type=int, default=0)
    a = ap.parse_args()
    bin_dir = os.path.abspath(os.path.join(a.build, "bin"))
    test_dir = os.path.abspath(os.path.join(a.build, "tests"))
    tmp = tempfile.mkdtemp(prefix="warrant-conf-")
    label = f"shards={a.shards}" if a.shards else "single"
    try:
        run(a, bin_dir, test_dir, tmp, label)
    finally:
        stop_all()
    if FAILS:
        print(f"conformance ({label}): {len(FAILS)} failed; logs in {tmp}")
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"conformance ({label}): all passed")
    return 0


def run(a, bin_dir, test_dir, tmp, label):
    sock = os.path.join(tmp, "redis.sock")
    spawn(["redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
           "--appendonly", "no", "--dir", tmp], os.path.join(tmp, "redis.log"))
    r = redis.Redis(unix_socket_path=sock, decode_responses=True)

    def pong():
        try:
            return r.ping()
        except redis.exceptions.ConnectionError:
            return False
    wait_for(pong, 10, "redis-server")
    # the library of functions every user calls, as Redis' administrator loads it
    lib = subprocess.run([os.path.join(bin_dir, "warrantctl"), "functions", "show"],
                         capture_output=True, check=True, text=True).stdout
    r.execute_command("FUNCTION", "LOAD", "REPLACE", lib)
    for user in ("decider", "monitor"):
        r.execute_command(*acl_args(user, a.shards))
        secret(os.path.join(tmp, f"{user}-password"), f"{user}-pw\n")
    port_file = os.path.join(tmp, "target.port")
    spawn([os.path.join(test_dir, "fake_target"), "--port-file", port_file],
          os.path.join(tmp, "target.log"))
    wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip(), 10, "fake_target")
    port = open(port_file).read().strip()

    # a key pair from each library's keygen; the workers' JWKS holds both
    # (rotation by kid: warrantd(7) §3.2)
    py_key, node_key = os.path.join(tmp, "k1"), os.path.join(tmp, "k2")
    subprocess.run([sys.executable, "-m", "warrant", "keygen", "--kid", "k1", "--out", py_key],
                   check=True, capture_output=True, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "clients", "python")))
    subprocess.run(["node", os.path.join(ROOT, "clients", "node", "bin", "warrant-keygen.js"),
                    "--kid", "k2", "--out", node_key], check=True, capture_output=True)
    check(os.stat(py_key + ".key").st_mode & 0o777 == 0o600, "python keygen: key not 0600")
    check(os.stat(node_key + ".key").st_mode & 0o777 == 0o600, "node keygen: key not 0600")
    keys = [json.load(open(p + ".jwks.json"))["keys"][0] for p in (py_key, node_key)]
    jwks = os.path.join(tmp, "all.jwks.json")
    with open(jwks, "w") as f:
        json.dump({"keys": keys}, f)

    ini = os.path.join(tmp, "warrantd.ini")
    with open(ini, "w") as f:
        f.write(f"""[daemon]
consumer = c1
heartbeat_ms = 1000
[redis]
socket = {sock}
prefix = warrant
block_ms = 200
claim_interval_ms = 200
{"shards = %d" % a.shards if a.shards else ""}
[redis.decider]
username = decider
password_file = decider-password
[redis.monitor]
username = monitor
password_file = monitor-password
[records]
signature = required
algorithm = ES256
verify_key_file = all.jwks.json
issuer = decider.test
max_window_s = 604800
[retry]
base_ms = 50
cap_ms = 500
max_attempts = 3
[action gate.open]
url = http://127.0.0.1:{port}/gates/{{resource}}/open
auth = none
""")
    wd = spawn([os.path.join(bin_dir, "warrantd"), "-c", ini], os.path.join(tmp, "warrantd.log"))

    t0 = (time.time_ns() // 1_000_000 // 1000 - 1) * 1000     # whole seconds: faketime's
    py = warrant.Decider(ini, key_file=py_key + ".key", kid="k1", clock=lambda: t0)
    cases = valid_cases(t0)

    # ---- 1. byte-equal payloads: warrantctl writes eq-i, the libraries prepare eq-i
    cli_payload = {}
    for i, d in enumerate(cases):
        rid = f"eq-{i}"
        res = run_cli(bin_dir, ini, py_key + ".key", "k1", d, rid, t0)
        if not check(res.returncode == 0 and res.stdout.strip() == rid,
                     f"{label} cli case {i}: rc {res.returncode}: {res.stderr.strip()}"):
            continue
        cli_payload[rid] = py.redis.connection_pool and None
    mon = redis.Redis(unix_socket_path=sock, username="monitor", password="monitor-pw",
                      decode_responses=True)
    keys_of = lambda rid: warrant.Keys("warrant", warrant.shard_of(rid, a.shards), a.shards)  # noqa: E731
    for i in range(len(cases)):
        rid = f"eq-{i}"
        rec = mon.hget(keys_of(rid).decision + rid, "record")
        if check(rec is not None, f"{label} cli case {i}: no record in shard {warrant.shard_of(rid, a.shards)}"):
            cli_payload[rid] = payload_of(rec)
    node_prep = run_node(tmp, ini, node_key + ".key", "k2", t0,
                         [dict(d, recordId=f"eq-{i}") for i, d in enumerate(cases)], False)
    for i, d in enumerate(cases):
        rid = f"eq-{i}"
        p = py.prepare(**py_args(dict(d, recordId=rid)))
        check(payload_of(p[2]) == cli_payload.get(rid),
              f"{label} case {i}: python payload differs from warrantctl's:\n {payload_of(p[2])}\n {cli_payload.get(rid)}")
        np = node_prep[i]
        check("payload" in np and np["payload"].encode() == cli_payload.get(rid),
              f"{label} case {i}: node payload differs from warrantctl's:\n {np}\n {cli_payload.get(rid)}")
    print(f"{label}: 1. {len(cases)} inputs, byte-equal payloads from the three writers", flush=True)

    # ---- 1b. RS256 and HS256 sign deterministically: the whole record byte-equal
    data = os.path.join(ROOT, "tests", "data")
    for alg, key, pub in (("RS256", "test-rs256.key", "test-rs256.pub"),
                          ("HS256", "test-hs256.secret", "test-hs256.secret")):
        for n in (key, pub):
            os.chmod(os.path.join(data, n), 0o600 if n.endswith((".key", ".secret")) else 0o644)
        alg_ini = os.path.join(tmp, f"{alg}.ini")
        with open(alg_ini, "w") as f:          # a prefix no worker reads, the default user
            f.write(f"[redis]\nsocket = {sock}\nprefix = alg{alg}\n"
                    f"{'shards = %d' % a.shards if a.shards else ''}\n[records]\nalgorithm = {alg}\n"
                    f"verify_key_file = {os.path.join(data, pub)}\nissuer = decider.test\n"
                    "[action gate.open]\nurl = http://127.0.0.1:1/{resource}\nauth = none\n")
        kpath = os.path.join(data, key)
        pa = warrant.Decider(alg_ini, key_file=kpath, kid="k-" + alg, clock=lambda: t0)
        nres = run_node(tmp, alg_ini, kpath, "k-" + alg, t0,
                        [dict(d, recordId=f"{alg}-{i}") for i, d in enumerate(cases)], False)
        for i, d in enumerate(cases):
            rid = f"{alg}-{i}"
            res = run_cli(bin_dir, alg_ini, kpath, "k-" + alg, d, rid, t0)
            ak = warrant.Keys(f"alg{alg}", warrant.shard_of(rid, a.shards), a.shards)
            cli_text = r.hget(ak.decision + rid, "record") if res.returncode == 0 else None
            check(cli_text is not None, f"{label} {alg} cli case {i}: {res.stderr.strip()}")
            py_text = pa.prepare(**py_args(dict(d, recordId=rid)))[2]
            check(py_text == cli_text, f"{label} {alg} case {i}: python record differs from warrantctl's")
            check(nres[i].get("text") == cli_text, f"{label} {alg} case {i}: node record differs: {nres[i]}")
        pa.close()
    print(f"{label}: 1b. RS256 and HS256: the whole signed records byte-equal from the three writers",
          flush=True)

    # ---- 2. each writer writes them; jose verifies; the worker runs them
    written = {f"eq-{i}": "cli" for i in range(len(cases))}
    for i, d in enumerate(cases):
        rid = py.decide(**py_args(dict(d, recordId=f"py-{i}")))
        written[rid] = "python"
    py_free = py.decide(**py_args(cases[0]))           # a generated id
    written[py_free] = "python"
    for i, res in enumerate(run_node(tmp, ini, node_key + ".key", "k2", t0,
                                     [dict(d, recordId=f"node-{i}") for i, d in enumerate(cases)]
                                     + [cases[0]], True)):
        if check("ok" in res, f"{label} node write {i}: {res}"):
            written[res["ok"]] = "node"
    # the same claims as warrantctl's, the id aside; the hash and queue fields
    for rid, who in written.items():
        k = keys_of(rid)
        h = mon.hgetall(k.decision + rid)
        if not check(h.get("record"), f"{label} {who} {rid}: no record in its shard"):
            continue
        m = re.match(r"(eq|py|node)-(\d+)$", rid)
        i = int(m.group(2)) if m else 0
        want = cli_payload.get(f"eq-{i}", b"").replace(f'"recordId":"eq-{i}"'.encode(),
                                                       f'"recordId":"{rid}"'.encode())
        check(payload_of(h["record"]) == want, f"{label} {who} {rid}: claims differ from warrantctl's")
        check(h.get("createdAt") == fmt_time(t0), f"{label} {who} {rid}: createdAt {h.get('createdAt')}")
    recs = os.path.join(tmp, "records.json")
    with open(recs, "w") as f:
        json.dump([{"id": rid, "jws": mon.hget(keys_of(rid).decision + rid, "record")}
                   for rid in written], f)
    v = subprocess.run(["node", os.path.join(ROOT, "tests", "conformance", "node_writer.mjs"),
                        "verify", jwks, recs], capture_output=True, text=True, timeout=60)
    vr = json.loads(v.stdout) if v.returncode == 0 else {"ok": 0, "bad": [v.stderr]}
    check(vr["ok"] == len(written) and not vr["bad"], f"{label} jose: {vr}")
    # the traceparent reached the stream entry
    for rid in ("eq-3", "py-3", "node-3"):
        ents = [e for e in mon.xrange(keys_of(rid).jobs) if e[1].get("id") == rid]
        check(ents and ents[0][1].get("traceparent") == cases[3]["traceparent"],
              f"{label} {rid}: stream entry {ents}")
    for rid in written:
        try:
            st = py.wait(rid, 30)
        except warrant.WaitTimeout as e:
            st = e.status
        check(st and st.get("state") == "done", f"{label} {written[rid]} {rid}: worker: {st}")
    print(f"{label}: 2. {len(written)} records written (cli, python, node): jose verified "
          f"{vr['ok']}, the worker ran them", flush=True)

    # ---- 3. invalid inputs: refused by all three; forged, dead-lettered
    inv = invalid_cases(t0)
    node_res = run_node(tmp, ini, node_key + ".key", "k2", t0,
                        [dict(d, recordId=d.get("recordId") or f"nbad-{n}")
                         for n, _, _, d in inv], True)
    signer = Signer.from_file("ES256", py_key + ".key", "k1")
    forged = {}
    for (name, field, verdict, d), nres in zip(inv, node_res):
        rid_py, rid_cli = d.get("recordId") or f"pbad-{name}", d.get("recordId") or f"cbad-{name}"
        try:
            py.decide(**py_args(dict(d, recordId=rid_py)))
            check(False, f"{label} python wrote invalid {name}")
        except warrant.RecordError as e:
            check(e.field == field, f"{label} python {name}: field {e.field}, want {field}")
            if verdict == "unknown-action":
                check(isinstance(e, warrant.UnknownActionError), f"{label} python {name}: {e!r}")
        check(nres.get("err") in ("RecordError", "UnknownActionError") and nres.get("field") == field,
              f"{label} node {name}: {nres}, want field {field}")
        res = run_cli(bin_dir, ini, py_key + ".key", "k1", d, rid_cli, t0)
        check(res.returncode != 0 and not res.stdout.strip(),
              f"{label} warrantctl {name}: rc {res.returncode} {res.stdout}")
        for rid in {rid_py, rid_cli, d.get("recordId") or f"nbad-{name}"}:
            check(not r.exists(keys_of(rid).decision + rid), f"{label} {name}: {rid} was written")
        # forged past the checks: what the worker does with it
        rid = d.get("recordId") or f"forged-{name}"
        rec = {"recordId": rid, "onBehalfOf": d["subject"], "action": d["action"],
               "resource": d["resource"], "parameters": d["parameters"], "basis": d["basis"],
               "decidedAt": fmt_time(t0)}
        if d.get("notBefore"):
            rec["notBefore"] = d["notBefore"]
        rec["expiresAt"] = d["expiresAt"]
        rec["iss"] = d.get("issuer") or "decider.test"
        k = keys_of(rid)
        r.hset(k.decision + rid, mapping={"record": signer.sign(payload_bytes(rec)),
                                          "state": "queued", "createdAt": fmt_time(t0)})
        if d.get("notBefore"):
            r.zadd(k.scheduled, {rid: warrant.record.parse_time(d["notBefore"])})
            forged[rid] = (name, verdict)
        else:
            sid = r.xadd(k.jobs, {"id": rid})
            forged[sid if verdict == "no-id" else rid] = (name, verdict)

    def dead_reasons():
        out = {}
        for s in range(max(a.shards, 1)):
            for _, f in r.xrange(warrant.Keys("warrant", s, a.shards).jobs.replace(":jobs", ":dead")):
                out[f.get("id") or f.get("streamId")] = f.get("reason")
        return out

    def settled():
        dead = dead_reasons()
        for rid, (name, verdict) in forged.items():
            if verdict == "expired":
                if r.hget(keys_of(rid).decision + rid, "state") != "expired":
                    return None
            elif rid not in dead:
                return None
        return dead
    try:
        dead = wait_for(settled, 30, "the worker's verdicts on the forged records")
    except SystemExit as e:
        dead = dead_reasons()
        check(False, f"{label} {e}: dead {dead}")
    for rid, (name, verdict) in forged.items():
        if verdict == "expired":
            continue
        check(dead.get(rid) == verdict, f"{label} forged {name}: worker said {dead.get(rid)}, want {verdict}")
    print(f"{label}: 3. {len(inv)} invalid inputs refused by the three writers; forged, "
          "each one the worker dead-letters (or never runs)", flush=True)
    py.close()
    check(wd.poll() is None, f"{label}: warrantd exited")


if __name__ == "__main__":
    sys.exit(main())

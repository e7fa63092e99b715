#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""The Python decider library's throughput with ES256 (bench/clients.sh).
    decider_py.py SOCKET N  -> one line per mode: "python MODE N records S s R records/s"
Modes: decide (one call, one MULTI/EXEC round trip, a generated id),
decide-id (a caller's id: WATCH, EXISTS, MULTI/EXEC), decide_many (batches of 100),
sign (check and sign only, prepare())."""
import datetime as dt
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
from warrant import Decider, Settings  # noqa: E402

sock, n = sys.argv[1], int(sys.argv[2])
key = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "test-es256.key")
os.chmod(key, 0o600)
d = Decider(settings=Settings(socket=sock, issuer="bench", actions=["gate.open"]), key_file=key, kid="k1")
args = dict(subject="operator:4417", action="gate.open", resource="gates/7",
            parameters={"duration_s": 30}, basis="ticket:CHG-1182", expires_at=dt.timedelta(hours=12))


def redis_cpu():
    i = d.redis.info("cpu")
    return i["used_cpu_user"] + i["used_cpu_sys"]


def run(mode, f, count):
    """Wall time, and the CPU time of this process and of redis-server: on a
    shared machine the CPU figures say what the library costs."""
    d.redis.flushall()
    r0, c0, t = redis_cpu(), time.process_time(), time.perf_counter()
    f(count)
    s, c, r = time.perf_counter() - t, time.process_time() - c0, redis_cpu() - r0
    print(f"python {mode:<12} {count / s:>8,.0f} records/s wall  {c / count * 1e6:6.1f} us client CPU"
          f"  {r / count * 1e6:5.1f} us redis CPU  ({count / c:,.0f} records per client CPU-second)",
          flush=True)


run("sign", lambda c: [d.prepare(**args) for _ in range(c)], n)
run("decide", lambda c: [d.decide(**args) for _ in range(c)], n)
run("decide-id", lambda c: [d.decide(**args, record_id=f"id-{i}") for i in range(c)], n)
run("decide_many", lambda c: [d.decide_many([args] * 100) for _ in range(c // 100)], n)
d.close()

# SPDX-License-Identifier: BSD-2-Clause
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
DATA = os.path.join(ROOT, "tests", "data")
sys.path.insert(0, os.path.dirname(HERE))


@pytest.fixture(scope="session", autouse=True)
def key_modes():
    # git keeps no group/other bits: the test keys get 0600 (make modes does too)
    for n in os.listdir(DATA):
        if n.endswith((".key", ".secret")):
            os.chmod(os.path.join(DATA, n), 0o600)


@pytest.fixture(scope="session")
def redis_sock():
    """A private redis-server on a unix socket, stopped by its PID."""
    d = tempfile.mkdtemp(prefix="warrant-py-")
    sock = os.path.join(d, "redis.sock")
    p = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
                          "--appendonly", "no", "--dir", d], stdout=subprocess.DEVNULL)
    import redis
    r = redis.Redis(unix_socket_path=sock)
    deadline = time.monotonic() + 10
    while True:
        try:
            r.ping()
            break
        except redis.exceptions.ConnectionError:
            if time.monotonic() > deadline or p.poll() is not None:
                p.kill()
                raise RuntimeError("redis-server did not start")
            time.sleep(0.01)
    yield sock
    p.terminate()
    p.wait(10)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def rconn(redis_sock):
    import redis
    r = redis.Redis(unix_socket_path=redis_sock, decode_responses=True)
    r.flushall()
    return r

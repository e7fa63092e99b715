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


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def cluster_port():
    """A one-node Redis Cluster owning every slot, on a free TCP port (and
    its bus port + 10000); tried on another port if that one is taken."""
    import redis
    for _ in range(5):
        port = _free_port()
        if port > 55535:
            continue
        d = tempfile.mkdtemp(prefix="warrant-cl-")
        p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                              "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                              "--cluster-announce-ip", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", d],
                             stdout=subprocess.DEVNULL)
        r = redis.Redis(port=port)
        deadline = time.monotonic() + 10
        while p.poll() is None and time.monotonic() < deadline:
            try:
                r.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.01)
        if p.poll() is not None:
            shutil.rmtree(d, ignore_errors=True)
            continue
        r.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        while b"cluster_state:ok" not in r.execute_command("CLUSTER", "INFO"):
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster did not come up")
            time.sleep(0.01)
        yield port
        p.terminate()
        p.wait(10)
        shutil.rmtree(d, ignore_errors=True)
        return
    raise RuntimeError("no free port for the cluster node")

# SPDX-License-Identifier: BSD-2-Clause
"""The examples of README.md ("For deciding services") and of this package's
README run as written, against a private redis-server; only the INI path changes."""
import os
import re
import shutil

import pytest

from conftest import DATA, ROOT


def blocks(path, lang):
    with open(path, encoding="utf-8") as f:
        return re.findall(r"```" + lang + r"\n(.*?)```", f.read(), re.S)


@pytest.fixture
def ini(tmp_path, redis_sock):
    shutil.copy(os.path.join(DATA, "test-es256.key"), tmp_path / "decider.key")
    os.chmod(tmp_path / "decider.key", 0o600)
    p = tmp_path / "warrantd.ini"
    p.write_text(f"[redis]\nsocket = {redis_sock}\n[records]\nissuer = d.test\n"
                 "[action gate.open]\nurl = http://x/{resource}\n")
    return str(p)


@pytest.mark.parametrize("path", [os.path.join(ROOT, "README.md"),
                                  os.path.join(ROOT, "clients", "python", "README.md")])
def test_python_examples_run(path, ini, rconn):
    code = [b for b in blocks(path, "python") if "Decider(" in b]
    assert code, f"no example in {path}"
    src = code[0].replace("/etc/warrantd/warrantd.ini", ini)
    # the package README's example waits for a worker: none here, so the state is set
    src = src.replace("print(d.wait(rid, timeout=3600))", "")
    ns = {"print": lambda *a: None}
    exec(compile(src, path, "exec"), ns)
    rid = ns["rid"]
    assert rconn.hget(f"warrant:decision:{rid}", "state") == "queued"

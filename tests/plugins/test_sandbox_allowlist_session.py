"""Issue 30: a realistic session runs whole under the seccomp allowlist.

'everything the real CLIs, git, Python, Node and common test runners need is allowed': a Trial's
command that works a repository with git, runs a test suite with ``python -m pytest`` (threads,
subprocesses, a venv), runs Node (workers, child processes, a loopback server, zlib, crypto,
file watching), packs and installs an npm package offline and starts both agent CLIs. Every step
must succeed: a needed system call the filter refuses fails this test. (The agent CLIs' whole
sessions under the allowlist are ``tests/harnesscheck`` and ``tests/plugins/test_broker_*``.)
"""

from __future__ import annotations

import functools
import shutil
import sys
from pathlib import Path

import pytest
import trio
from assay.hooks.protocols import Invocation
from assay.plugins.sandbox_bwrap import seccomp
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.sessions.harnesskit import install_paths

from tests.plugins.test_sandbox_bwrap_attacks import bwrap  # noqa: F401 (a fixture)

SESSION = r"""
set -euo pipefail
step() { echo "ok $1"; }
git init -q -b main . && git config user.name agent && git config user.email agent@example.invalid
mkdir -p pkg tests
printf 'def add(a, b):\n    return a + b\n' > pkg/calc.py && touch pkg/__init__.py
cat > tests/test_calc.py <<'EOF'
import concurrent.futures, multiprocessing, subprocess, sys, tempfile, threading
from pkg.calc import add

def test_add():
    assert add(2, 3) == 5

def test_threads_and_processes():
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert list(pool.map(add, [1, 2], [3, 4])) == [4, 6]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        assert pool.starmap(add, [(1, 1), (2, 2)]) == [2, 4]
    assert subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True).stdout == b"1\n"

def test_files(tmp_path):
    (tmp_path / "x").write_text("y")
    assert (tmp_path / "x").read_text() == "y"
EOF
git add -A && git commit -qm "calc" && git log --oneline | grep -q calc && step git-commit
git checkout -q -b feature && echo "# note" >> pkg/calc.py && git commit -qam note && git checkout -q main
git merge -q --no-edit feature && git diff HEAD~1 --stat | grep -q calc.py && git gc -q && step git-branch-merge-gc
git clone -q . ../clone && git -C ../clone log -1 --format=%s | grep -q note && step git-clone
python -m pytest -q -p no:cacheprovider tests 2>&1 | tail -1 | grep -q "3 passed" && step pytest
python -m venv --without-pip ../venv && ../venv/bin/python -c "import sys; assert sys.prefix != sys.base_prefix" \
  && step python-venv
python - <<'EOF' && step python-stdlib
import asyncio, hashlib, socket, sqlite3, ssl, zlib, subprocess, os
db = sqlite3.connect("../db.sqlite"); db.execute("create table t (x)"); db.commit()
server = socket.create_server(("127.0.0.1", 0)); port = server.getsockname()[1]
client = socket.create_connection(("127.0.0.1", port)); conn, _ = server.accept(); client.sendall(b"hi")
assert conn.recv(2) == b"hi" and socket.getaddrinfo("localhost", 80)
assert zlib.decompress(zlib.compress(b"x" * 100)) == b"x" * 100 and hashlib.sha256(b"").hexdigest()
ssl.create_default_context()
async def main():
    proc = await asyncio.create_subprocess_exec("true"); await proc.wait()
asyncio.run(main())
EOF
node - <<'EOF' && step node
const { Worker } = require("worker_threads"), cp = require("child_process"), http = require("http");
const fs = require("fs"), zlib = require("zlib"), crypto = require("crypto"), os = require("os");
const watcher = fs.watch(".", () => {});
fs.writeFileSync("../node.txt", "x"); fs.promises.readFile("../node.txt");
zlib.gunzipSync(zlib.gzipSync("abc")); crypto.randomBytes(16); crypto.createHash("sha256").update("x").digest();
cp.execFileSync("git", ["status", "--short"]); os.cpus(); os.userInfo();
new Worker("require('worker_threads').parentPort.postMessage(42)", { eval: true }).on("message", (m) => {
  const server = http.createServer((req, res) => res.end("pong")).listen(0, "127.0.0.1", () => {
    http.get({ host: "127.0.0.1", port: server.address().port }, (res) => {
      res.on("data", () => {}); res.on("end", () => { server.close(); watcher.close(); process.exit(m === 42 ? 0 : 1); });
    });
  });
});
EOF
mkdir -p ../lib && (cd ../lib && npm init -y >/dev/null && echo 'module.exports = 7' > index.js && npm pack -q >/dev/null)
mkdir -p ../app && cd ../app && npm init -y >/dev/null && npm install --offline --no-audit --no-fund -q ../lib/lib-1.0.0.tgz >/dev/null \
  && npm pkg set scripts.test='node -e "process.exit(require(\"lib\") === 7 ? 0 : 1)"' && npm test -s && step npm
cd - >/dev/null
claude --version | grep -q "Claude Code" && step claude
codex --version | grep -q codex && step codex
"""
STEPS = ["git-commit", "git-branch-merge-gc", "git-clone", "pytest", "python-venv", "python-stdlib", "node", "npm",
         "claude", "codex"]


@pytest.mark.slow
def test_a_realistic_session_needs_no_refused_system_call(bwrap: BwrapBackend, tmp_path: Path) -> None:
    """'A test that runs a realistic session under the allowlist (git, python -m pytest, node, npm,
    the real CLIs) and fails if a needed syscall is refused.'"""
    if not seccomp.supported():
        pytest.skip(f"no seccomp filter here: {seccomp.why_not()}")
    missing = [tool for tool in ("node", "npm", "claude", "codex") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    pytest.importorskip("pytest")
    work, home = tmp_path / "trial" / "work", tmp_path / "trial" / "home"
    (work / "repo").mkdir(parents=True)
    home.mkdir()
    tools = {p for tool in ("claude", "codex", "npm") for p in install_paths(str(Path(shutil.which(tool)).resolve()))}
    invocation = Invocation(
        argv=("bash", "-c", SESSION), cwd=work / "repo", log_dir=tmp_path / "trial",
        env={"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
             "npm_config_update_notifier": "false", "npm_config_cache": str(home / ".npm")},
        read_write=(work, home), read_only=tuple(sorted(tools)),
    )
    lines: list[str] = []
    result = trio.run(functools.partial(bwrap.run, invocation, timeout=240, on_line=lines.append))
    done = [line.removeprefix("ok ") for line in lines if line.startswith("ok ")]
    assert done == STEPS, f"steps done: {done}; stderr: {result.stderr_tail}"
    assert result.exit_code == 0, result.stderr_tail

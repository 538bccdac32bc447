#!/usr/bin/env python3
"""A Custom runner that attacks the host from inside its Trial (issue 14's attack battery).

behaviour.json holds {"mode": ..., "marker": host path, "source": task source repository}.
Modes:
  git_config   commits the fix, then arms its repository's config so that host git would run a
               payload: core.fsmonitor, a core.hooksPath post-index-change hook, a clean filter
               on every file. The payload touches ``marker`` (a path the Trial can't see) and
               leaves a ``sleep 4141`` behind; it never runs here, since the runner runs no git after.
  gitdir_source  replaces .git with ``gitdir:`` pointing at the task's source repository, whose
               later commit holds the fix; does no work itself.
  gitdir_other   the same, pointing at the other Arm's Trial (its path follows from its own).
  fifo         makes output/result.json a FIFO.
  zero         makes output/result.json a symbolic link to /dev/zero.
  long_line    prints 300 MB with no newline, then delivers the fix.
  bad_port     sends its proxy ``CONNECT host:\xb2`` (a non-ASCII digit), then delivers the fix.
  connect_loop opens refused CONNECTs through its proxy in a loop for up to 30 s, then delivers the fix.
  deep         delivers the fix and leaves a folder 1,200 levels deep in its repository and its home.
  too_deep     delivers the fix and leaves, in its repository, files whose paths are longer than one call
               may name (PATH_MAX), below folders named in bytes that aren't UTF-8.
  link_tests   delivers the fix and commits ``tests`` as a symbolic link to ``target`` (a host folder).
  new_test     commits a new test, ``tests/test_new.py`` (it passes once add() adds), and leaves the bug.
  loud_import  delivers the fix in a calc.py that prints 400 MB whenever it is imported (by its tests).
  blobs        delivers the fix with two 128 MiB blobs of one byte each committed (a 1.2 MiB repository).
  shadow_unittest  leaves the bug; commits a package ``unittest`` whose ``__main__`` prints OK and exits 0.
  edit_tests   leaves the bug; rewrites test_calc.py to a test that always passes.
  conftest_exit  leaves the bug; commits a conftest.py that exits 0 as pytest loads it.
  skip_test    leaves the bug; marks the test in test_calc.py skipped.
  chaos        leaves the bug and whatever ``behaviour.json`` says (tests/engine/test_leftovers_properties.py):
               a tree (``tree``: entries of hex-named path parts, a kind and a size or link target), some
               of it committed (``commit``), bytes sent to its proxy (``proxy``, hex) and the bytes of
               its result.json (``result``, hex; none: no result.json).
"""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

FIXED = "def add(a, b):\n    return a + b\n"
GIT = ["git", "-c", "user.name=runner", "-c", "user.email=runner@test"]


def fix_and_commit() -> None:
    Path("calc.py").write_text(FIXED)
    subprocess.run([*GIT, "commit", "-qam", "fix"], check=True)


def arm_git_config(marker: str) -> None:
    payload = Path(".git/payload")
    payload.write_text(f"#!/bin/sh\ntouch '{marker}'\n(setsid sleep 4141 >/dev/null 2>&1 &)\ncat\n")
    payload.chmod(0o755)
    hooks = Path(".git/evil-hooks")
    hooks.mkdir()
    for hook in ("post-index-change", "post-checkout", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch '{marker}'\n")
        (hooks / hook).chmod(0o755)
    Path(".gitattributes").write_text("* filter=evil\n")
    Path("untracked.txt").write_text("left behind\n")  # so status has work to do
    for key, value in (("core.fsmonitor", str(payload.absolute())), ("core.hooksPath", str(hooks.absolute())),
                       ("filter.evil.clean", str(payload.absolute())), ("filter.evil.smudge", str(payload.absolute())),
                       ("filter.evil.required", "true"), ("diff.external", str(payload.absolute()))):
        subprocess.run(["git", "config", key, value], check=True)


def swap_gitdir(target: Path) -> None:
    subprocess.run(["rm", "-rf", ".git"], check=True)
    Path(".git").write_text(f"gitdir: {target}\n")


def ask_proxy(request: bytes) -> bytes:
    """Send one request to the sandbox's proxy (through the relay HTTPS_PROXY names); its answer."""
    host, port = os.environ["HTTPS_PROXY"].rsplit("/", 1)[-1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request)
        return conn.recv(4096)


def deep_folder(top: Path, depth: int = 1200) -> None:
    here = os.open(top, os.O_RDONLY)
    for _ in range(depth):  # relative to a descriptor: the path grows past what one call may name
        os.mkdir("d", dir_fd=here)
        below = os.open("d", os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = below
    os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, dir_fd=here))
    os.close(here)


def too_deep(top: Path, files: int = 100) -> None:
    """Folders of long names until their path below ``top`` is nearly as long as one call may name,
    then ``files`` files whose paths are longer: a copy that names each file by its path (relative to
    a folder or not) can't make them, and says so for each."""
    here, length, longest = os.open(top, os.O_RDONLY), 0, 3950
    name = b"\xff".decode(errors="surrogateescape") + "d" * 199
    while length < longest:
        part = name[:longest - length]
        os.mkdir(part, dir_fd=here)
        below = os.open(part, os.O_RDONLY, dir_fd=here)
        os.close(here)
        here, length = below, length + 1 + len(part)
    for i in range(files):
        os.close(os.open(f"{i:04d}" + "f" * 200, os.O_WRONLY | os.O_CREAT, dir_fd=here))
    os.close(here)


def commit_all(message: str) -> None:
    subprocess.run([*GIT, "add", "-A"], check=True)
    subprocess.run([*GIT, "commit", "-qm", message], check=True)


def commit_blob(name: str, size: int, byte: bytes) -> None:
    """A blob of ``size`` copies of ``byte`` in the index and the next commit, never in the work tree."""
    writer = subprocess.Popen(["git", "hash-object", "-w", "--stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    chunk = byte * (1 << 20)
    for _ in range(size >> 20):
        writer.stdin.write(chunk)
    sha = writer.communicate()[0].decode().strip()
    subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"100644,{sha},{name}"], check=True)


def make_tree(top: Path, entries: list[dict]) -> None:
    """Each entry made under ``top``, by name bytes, whatever is already there (errors are part of it)."""
    for entry in entries:
        path = os.path.join(os.fsencode(top), *(bytes.fromhex(part) for part in entry["path"]))
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if entry["kind"] == "dir":
                os.makedirs(path, exist_ok=True)
            elif entry["kind"] == "link":
                os.symlink(bytes.fromhex(entry["target"]), path)
            elif entry["kind"] == "fifo":
                os.mkfifo(path)
            elif entry["kind"] == "deep":
                os.makedirs(path, exist_ok=True)
                deep_folder(Path(os.fsdecode(path)), entry["size"])
            else:
                with open(path, "wb") as f:
                    f.write(bytes.fromhex(entry.get("bytes", "")) * max(1, entry["size"]))
        except OSError:
            pass


def chaos(behaviour: dict, request: dict, out: Path) -> None:
    make_tree(Path.cwd(), behaviour["tree"])
    if behaviour["commit"]:
        subprocess.run([*GIT, "add", "-A"], capture_output=True)
        subprocess.run([*GIT, "commit", "-qm", "whatever"], capture_output=True)
    make_tree(Path(request["home"]), behaviour["tree"])
    for line in behaviour["proxy"]:
        try:
            ask_proxy(bytes.fromhex(line))
        except (OSError, KeyError):
            pass
    if behaviour["result"] is not None:
        out.write_bytes(bytes.fromhex(behaviour["result"]))


def main() -> int:
    request = json.loads(Path(os.environ["ASSAY_REQUEST"]).read_text())
    behaviour = json.loads((Path(request["runner_dir"]) / "behaviour.json").read_text())
    mode = behaviour["mode"]
    out = Path(request["output_dir"]) / "result.json"
    delivered = json.dumps({"version": 1, "outcome": "delivered"})
    if mode == "git_config":
        fix_and_commit()
        arm_git_config(behaviour["marker"])
    elif mode == "gitdir_source":
        swap_gitdir(Path(behaviour["source"]) / ".git")
    elif mode == "gitdir_other":
        # …/trials/<task>/<arm>-0/attempt-0/repo: the other Arm's path is known, though not visible here
        mine = Path(request["repository"])
        arm, index = mine.parent.parent.name.split("-")
        other = {"baseline": "candidate", "candidate": "baseline"}[arm]
        swap_gitdir(mine.parent.parent.parent / f"{other}-{index}" / mine.parent.name / "repo" / ".git")
    elif mode == "fifo":
        os.mkfifo(out)
        return 0
    elif mode == "zero":
        out.symlink_to("/dev/zero")
        return 0
    elif mode == "bad_port":
        print(ask_proxy(b"CONNECT host:\xb2 HTTP/1.1\r\n\r\n")[:40], flush=True)
        fix_and_commit()
    elif mode == "connect_loop":
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                ask_proxy(b"CONNECT refused.example:443 HTTP/1.1\r\n\r\n")
            except OSError:
                pass
        fix_and_commit()
    elif mode == "deep":
        fix_and_commit()
        deep_folder(Path.cwd())
        deep_folder(Path(request["home"]))
    elif mode == "too_deep":
        fix_and_commit()
        too_deep(Path.cwd())
    elif mode == "link_tests":
        fix_and_commit()
        os.symlink(behaviour["target"], "tests")
        commit_all("tests live elsewhere")
    elif mode == "new_test":
        Path("tests").mkdir()
        Path("tests/test_new.py").write_text("import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
                                             "    def test_add(self):\n        self.assertEqual(add(1, 1), 2)\n")
        commit_all("a new test")
    elif mode == "loud_import":
        Path("calc.py").write_text("import sys\nfor _ in range(400):\n    sys.stdout.write('x' * (1 << 20) + '\\n')\n"
                                   + FIXED)
        commit_all("a loud fix")
    elif mode == "blobs":
        Path("calc.py").write_text(FIXED)
        subprocess.run([*GIT, "add", "calc.py"], check=True)
        commit_blob("big1.bin", 128 << 20, b"\0")
        commit_blob("big2.bin", 128 << 20, b"\1")
        subprocess.run([*GIT, "commit", "-qm", "the fix, and some data"], check=True)
    elif mode == "shadow_unittest":
        Path("unittest").mkdir()
        Path("unittest/__init__.py").write_text("")
        Path("unittest/__main__.py").write_text("print('OK')\n")
        commit_all("tests, my way")
    elif mode == "edit_tests":
        Path("test_calc.py").write_text("import unittest\n\n\nclass T(unittest.TestCase):\n"
                                        "    def test_add(self):\n        pass\n")
        commit_all("a kinder test")
    elif mode == "conftest_exit":
        Path("conftest.py").write_text("import os\nos._exit(0)\n")
        commit_all("configure pytest")
    elif mode == "skip_test":
        text = Path("test_calc.py").read_text()
        Path("test_calc.py").write_text(text.replace("    def test_add", "    @unittest.skip('later')\n    def test_add"))
        commit_all("not now")
    elif mode == "chaos":
        chaos(behaviour, request, out)
        return 0
    elif mode == "long_line":
        chunk = b"x" * (1 << 20)
        for _ in range(300):
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        fix_and_commit()
    out.write_text(delivered)
    return 0


if __name__ == "__main__":
    sys.exit(main())

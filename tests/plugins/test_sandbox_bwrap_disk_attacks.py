"""Issue 39's overlay, attacked: a hostile Trial shapes the upper layer the host lays back over its
folders once it ends (docs/sandbox.md, "Disk"; the host's rules 1, 3 and 4).

The Trial knows the put-back: it leaves links to host files, replaces folders of its base by links
to ``/`` and back, names files ``-rf`` or in bytes that aren't UTF-8, tries to forge the overlay's
own marks or make a whiteout or a device, leaves sparse files and hard links that a naive copy
would blow up, a tree whose path is longer than the host can name, and daemons that would write
while the host reads. The folder must end exactly as the Trial saw it, nothing outside it changed,
the host's disk and memory bounded by the cap, and what can't be put back is the Trial's failure.

Real bwrap and a real overlay on a real capped ext4 (root, loop devices); each test skips with the
reason where those can't run.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import shutil
import signal
import stat
import sys
import textwrap
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from assay.hooks.protocols import Invocation, ProcessResult
from assay.plugins.sandbox_bwrap import disk
from assay.plugins.sandbox_bwrap.backend import BwrapBackend

from tests.plugins.test_sandbox_bwrap_disk import CAP, bwrap, caps  # noqa: F401 (fixtures)
from tests.sandbox_fixtures import processes_where

# What a reader of a folder sees, as JSON: run by the Trial inside on its view, and by the test on
# the host's folder once it is put back. Hard links as groups of names; no access times.
VIEW = r'''
import hashlib, json, os, stat
def view(top):
    seen, inodes = {}, {}
    for parent, folders, files in os.walk(top):
        for name in [".", *folders, *files] if parent == top else folders + files:
            path = os.path.join(parent, name)
            info = os.lstat(path)
            rel = os.path.relpath(path, top)
            if stat.S_ISLNK(info.st_mode):
                seen[rel] = ["link", os.readlink(path)]
            elif stat.S_ISREG(info.st_mode):
                inodes.setdefault(info.st_ino, []).append(rel)
                with open(path, "rb") as f:
                    head = hashlib.sha256(f.read(1 << 20)).hexdigest()  # a sparse file's GiB of holes: its head
                seen[rel] = ["file", info.st_mode, info.st_size, head, info.st_mtime_ns]
            else:
                seen[rel] = ["dir" if stat.S_ISDIR(info.st_mode) else "other", info.st_mode, info.st_mtime_ns]
    seen["hard links"] = sorted(sorted(names) for names in inodes.values() if len(names) > 1)
    return json.loads(json.dumps(seen))
'''


def view(folder: Path) -> dict:
    space: dict = {}
    exec(VIEW, space)
    return space["view"](str(folder))


def run(backend: BwrapBackend, trial: Path, code: str, *,
        read_only: tuple[Path, ...] = ()) -> tuple[ProcessResult, list[str]]:
    """``code`` (Python) as a Trial's command in ``trial``'s repository, its home beside it."""
    lines: list[str] = []
    invocation = Invocation(
        argv=(sys.executable, "-c", textwrap.dedent(code)), cwd=trial / "repo",
        env={"PATH": "/usr/bin:/bin", "HOME": str(trial / "home")},
        read_write=(trial / "repo", trial / "home"), read_only=read_only, log_dir=trial,
    )
    return trio.run(functools.partial(backend.run, invocation, timeout=60, on_line=lines.append)), lines


def leaves_all(outside: Path, rename: bool) -> str:
    """Everything a Trial might leave for the put-back to trip on; it prints what it was refused
    and, last, its own view of its repository."""
    return VIEW + f'''
import errno, fcntl, shutil, socket, struct
refused = {{}}
def tried(what, act):
    try:
        act()
    except OSError as e:
        refused[what] = errno.errorcode[e.errno]
tried("write through a link of its base", lambda: open("lnk/host.txt", "w").write("the Trial's"))
tried("hard link to a host file", lambda: os.link("/etc/passwd", "passwd"))
os.symlink("/etc/passwd", "to-passwd")  # links to host files, to be left as links
os.symlink({str(outside / "host.txt")!r}, "to-host")
open("rel/via-rel", "w").write("through ../home")  # a link of its base into its home: its home's layer
shutil.rmtree("keepme")
os.symlink("/", "keepme")  # a folder of its base now a link to /
os.unlink("sub/deep/a")  # a file made a folder and back
os.mkdir("sub/deep/a")
open("sub/deep/a/inner", "w").write("gone again")
shutil.rmtree("sub/deep/a")
open("sub/deep/a", "w").write("a file again")
shutil.rmtree("sub/other")  # a folder made a file and back: nothing of the old one returns
open("sub/other", "w").write("x")
os.unlink("sub/other")
os.mkdir("sub/other")
open("sub/other/new", "w").write("new")
for name in ["-rf", "--remove-destination", "-", "\\nline", "a b", b"\\xff\\xfe-not-utf8".decode(errors="surrogateescape")]:
    open(name, "w").write(repr(name))
os.mkfifo("fifo")
socket.socket(socket.AF_UNIX).bind("sock")
os.setxattr("-rf", "user.overlay.redirect", b"/etc")  # a user's mark the overlay ignores; never copied
tried("trusted.overlay.opaque", lambda: os.setxattr("sub", "trusted.overlay.opaque", b"y"))
tried("trusted.overlay.redirect", lambda: os.setxattr("sub/other", "trusted.overlay.redirect", b"/keepme"))
tried("whiteout", lambda: os.mknod("whiteout", stat.S_IFCHR | 0o600, os.makedev(0, 0)))
tried("device", lambda: os.mknod("null", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
def immutable():
    fd = os.open("-rf", os.O_RDONLY)
    try:
        fcntl.ioctl(fd, 0x40086602, struct.pack("l", 0x10))  # FS_IOC_SETFLAGS, FS_IMMUTABLE_FL: chattr +i
    finally:
        os.close(fd)
tried("chattr +i", immutable)
with open("sparse", "wb") as f:  # 1 GiB and 3 bytes, nearly all hole
    f.seek(1 << 30)
    f.write(b"end")
open("big", "wb").write(os.urandom(4 << 20))
os.mkdir("links")
for i in range(300):  # 1.2 GiB if copied link by link
    os.link("big", f"links/{{i}}")
    os.link("sparse", f"links/s{{i}}")
os.makedirs("locked/in")
open("locked/in/file", "w").write("behind 000")
if {rename!r}:
    os.rename("sub", "moved")  # a folder of its base renamed: the whole view is copied instead
seen = view(".")
os.chmod("locked", 0)
seen["locked"][1] = stat.S_IFDIR
print(json.dumps({{"refused": refused, "view": seen}}), flush=True)
'''


@pytest.mark.parametrize("rename", [False, True], ids=["laid over", "a renamed folder: copied whole"])
def test_a_hostile_trials_leftovers_come_back_as_it_saw_them_and_touch_nothing_else(
    bwrap: BwrapBackend, tmp_path: Path, rename: bool  # noqa: F811
) -> None:
    """Links to host files stay links, never written through nor followed, and a hard link to one
    can't be made; a link of the base to a host folder can't be written through from inside; the overlay's marks, whiteouts, devices and
    the immutable flag are refused; odd names, a FIFO and a socket come back as they are; sparse
    files and hard links cost the host what they cost the cap; the folder ends as the Trial saw it."""
    trial, outside = tmp_path / "trial", tmp_path / "outside"
    repo = trial / "repo"
    for folder in (repo / "sub" / "deep", repo / "sub" / "other", repo / "keepme", trial / "home", outside):
        folder.mkdir(parents=True)
    (repo / "sub" / "deep" / "a").write_text("base")
    (repo / "sub" / "other" / "old").write_text("base")
    (repo / "keepme" / "k").write_text("base")
    (repo / "lnk").symlink_to(outside)
    (repo / "rel").symlink_to("../home")
    (outside / "host.txt").write_text("the host's")
    before = view(outside)

    result, lines = run(bwrap, trial, leaves_all(outside, rename))

    assert result.exit_code == 0 and result.overrun is None, result.stderr_tail
    assert "assay sandbox" not in result.stderr_tail
    [said] = [json.loads(line) for line in lines]
    assert said["refused"] == {
        "write through a link of its base": "ENOENT",  # the host's folder isn't in the sandbox
        "hard link to a host file": "EXDEV",  # its layer is a file system of its own
        "trusted.overlay.opaque": "EPERM", "trusted.overlay.redirect": "EPERM",
        "whiteout": "EPERM", "device": "EPERM", "chattr +i": "EPERM",
    }
    assert view(repo) == said["view"]
    assert view(outside) == before and (outside / "host.txt").read_text() == "the host's"
    assert os.readlink(repo / "keepme") == "/" and os.readlink(repo / "to-passwd") == "/etc/passwd"
    assert (trial / "home" / "via-rel").read_text() == "through ../home"
    assert os.listxattr(repo / "-rf", follow_symlinks=False) == []
    inodes = {info.st_ino: info.st_blocks for parent, folders, files in os.walk(repo)
              for info in (os.lstat(os.path.join(parent, name)) for name in folders + files)}
    assert sum(inodes.values()) * 512 < 16 << 20  # 4 MiB and a few blocks, not 1.2 GiB of copies
    assert sorted(p.name for p in trial.iterdir()) == ["home", "repo"]  # nothing left beside them


HOSTILE = Path(__file__).parent.parent / "fakes" / "hostile_runner.py"
TOO_DEEP = f"""
import importlib.util, os, pathlib
spec = importlib.util.spec_from_file_location("hostile", {str(HOSTILE)!r})
hostile = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hostile)
hostile.too_deep(pathlib.Path.cwd(), files=1000)
open(os.path.join(os.environ["HOME"], "notes"), "w").write("its home")
print("left", flush=True)
"""


def test_what_the_host_cant_name_fails_its_trial_in_a_short_note_and_the_rest_comes_back(
    bwrap: BwrapBackend, tmp_path: Path  # noqa: F811
) -> None:
    """Finding: a tree whose paths are longer than the host can name made the put-back's copy fail
    on each file, and the host kept every word it said (4.3 KiB a file; an 8 GiB cap holds half a
    million files: 2 GiB of the host's memory, all in the Trial's stderr tail); and a put-back that
    failed was only a note, the Trial read as if its folder held all it left. Now the end of what
    the copy said is kept, the Trial fails with why, its other folder still comes back, and the file
    system goes."""
    trial = tmp_path / "trial"
    for folder in ("repo", "home"):
        (trial / folder).mkdir(parents=True)
    result, lines = run(bwrap, trial, TOO_DEEP, read_only=(HOSTILE,))
    assert lines == ["left"] and result.exit_code == 0
    assert result.overrun is not None and f"can't put back all the Trial left in {trial / 'repo'}" in result.overrun
    [note] = [line for line in result.stderr_tail.splitlines() if line.startswith("assay sandbox:")]
    assert "File name too long" in note and len(note) < 2 * disk.SAID
    assert (trial / "home" / "notes").read_text() == "its home"  # its other folder: put back
    assert bwrap.disk_pool.idle.get(CAP, []) == []  # not a file system to hand to the next Trial


def test_a_trial_that_uses_up_its_files_is_told_it_filled_its_cap(caps: disk.DiskCaps, tmp_path: Path) -> None:  # noqa: F811
    """Finding: the cap bounds files as well as bytes (ext4 has a fixed number of inodes, here one per
    4 KiB: 4,096 on 16 MiB), and a Trial that used them all got ENOSPC with its cap unnamed, its bytes
    nowhere near full."""
    folder, pool = tmp_path / "work", disk.Pool()
    folder.mkdir()
    staged = caps.start(16 << 20, [folder], pool)
    [inside] = staged.sources.values()
    made = 0
    with pytest.raises(OSError) as full:
        while True:
            os.close(os.open(inside / str(made), os.O_CREAT | os.O_WRONLY))
            made += 1
    assert full.value.errno == errno.ENOSPC and os.statvfs(inside).f_bavail * os.statvfs(inside).f_frsize > 8 << 20
    assert "the Trial filled its disk cap (0.02 GiB" in staged.finish()
    assert len(os.listdir(folder)) == made and pool.idle == {}


def test_nothing_of_the_trial_runs_while_its_layer_is_put_back(
    bwrap: BwrapBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """The host reads the upper layer as the Trial left it: a daemon the Trial started (own session,
    ignoring SIGTERM and SIGHUP) that keeps writing is gone before the put-back begins, so nothing
    changes what the host has just checked (its removals) before it copies."""
    trial = tmp_path / "trial"
    for folder in ("repo", "home"):
        (trial / folder).mkdir(parents=True)
    token = f"daemon-{os.getpid()}-{id(tmp_path)}"
    daemon = ("import signal\nfor s in (signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\n"
              "n = 0\nwhile True:\n    n += 1\n    open('late.txt', 'w').write(str(n))\n")
    code = f"""
        import os, signal, subprocess, sys, time
        signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGUSR1}})
        subprocess.Popen([sys.executable, "-c", {daemon!r}, {token!r}], start_new_session=True)
        while not os.path.exists("late.txt"):
            time.sleep(0.01)
        print("writing", flush=True)
        signal.sigwait({{signal.SIGUSR1}})  # the host has seen the daemon: end, leaving it writing
    """
    daemons = lambda: processes_where(lambda argv: token.encode() in argv)  # noqa: E731
    alive: list[int] = []

    def on_line(line: str) -> None:
        [pid] = daemons()  # seen from the host while the Trial runs
        alive.append(pid)
        os.kill(int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]), signal.SIGUSR1)  # its parent

    at_put_back: list[list[int]] = []
    put_back = disk.Layer.put_back

    def watched(layer: disk.Layer) -> None:
        at_put_back.append(daemons())
        put_back(layer)

    monkeypatch.setattr(disk.Layer, "put_back", watched)
    invocation = Invocation(argv=(sys.executable, "-c", textwrap.dedent(code)), cwd=trial / "repo",
                            env={"PATH": "/usr/bin:/bin", "HOME": str(trial / "home")},
                            read_write=(trial / "repo", trial / "home"), log_dir=trial)
    result = trio.run(functools.partial(bwrap.run, invocation, timeout=60, on_line=on_line))
    assert len(alive) == 1 and result.exit_code == 0 and result.overrun is None, result.stderr_tail
    assert at_put_back == [[], []]  # both layers put back, the daemon gone before either
    assert int((trial / "repo" / "late.txt").read_text() or "0") >= 0  # what it last wrote, whole or empty


# --- the put-back's reading of an overlay, on random work -----------------------------------------

NAMES = ("a", "b", "c")
PATHS = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join)
WORK = st.lists(st.one_of(
    st.tuples(st.just("write"), PATHS, st.binary(max_size=8)),
    st.tuples(st.just("mkdir"), PATHS),
    st.tuples(st.just("remove"), PATHS),
    st.tuples(st.just("rename"), PATHS, PATHS),
    st.tuples(st.just("symlink"), PATHS, st.sampled_from(["/", "/etc/passwd", "..", "a", "../../.."])),
    st.tuples(st.just("link"), PATHS, PATHS),
    st.tuples(st.just("chmod"), PATHS, st.sampled_from([0o000, 0o700, 0o644])),
    st.tuples(st.just("sparse"), PATHS, st.integers(1, 1 << 30)),
    st.tuples(st.just("fifo"), PATHS),
), max_size=20)
BASE = (("a", "dir"), ("a/b", "dir"), ("b", "dir"), ("c", "dir"), ("c/a", "dir"), ("a/a", "file"), ("a/b/c", "file"),
        ("a/b/a", "file"), ("b/a", "file"), ("c/a/b", "file"), ("c/b", "link"))


def _unlinked(root: Path, rel: str, *, last: bool) -> Path | None:
    """``root/rel``, unless a link is on the way (this runs on the host: nothing may leave ``root``)."""
    path = root
    parts = rel.split("/")
    for i, name in enumerate(parts):
        path = path / name
        if (i < len(parts) - 1 or last) and path.is_symlink():
            return None
    return path


def _do(root: Path, step: tuple) -> None:
    kind, rel, *args = step
    path = _unlinked(root, rel, last=kind in ("write", "chmod", "sparse"))
    other = _unlinked(root, args[0], last=False) if kind in ("rename", "link") else root
    if path is None or other is None or (kind in ("write", "sparse") and path.exists() and not path.is_file()):
        return  # through a link, or into a FIFO (which would block)
    try:
        if kind == "write":
            path.write_bytes(args[0])
        elif kind == "mkdir":
            path.mkdir()
        elif kind == "remove":
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        elif kind == "rename":
            os.rename(path, other)
        elif kind == "symlink":
            path.symlink_to(args[0])
        elif kind == "link":
            os.link(path, other, follow_symlinks=False)
        elif kind == "chmod":
            os.chmod(path, args[0])
        elif kind == "sparse":
            with open(path, "r+b" if path.exists() else "wb") as f:
                f.truncate(args[0])
        else:
            os.mkfifo(path)
    except OSError:
        pass  # as the Trial's own call would fail: the overlay is the truth either way


@pytest.fixture(scope="module")
def shared() -> tuple[disk.DiskCaps, disk.Pool]:
    found = disk.detect()
    if not found.in_force:
        pytest.skip(found.describe(CAP))
    return found, disk.Pool()  # one file system for every example, emptied between them


@settings(derandomize=True, database=None, deadline=None, max_examples=40,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(work=WORK)
def test_any_work_through_the_overlay_comes_back_exactly(shared: tuple[disk.DiskCaps, disk.Pool],
                                                         tmp_path_factory: pytest.TempPathFactory, work: list) -> None:
    """Whatever a Trial does through its overlay - deletions, renames of its base's folders (the
    whole view copied), files and folders and links replacing each other, hard links, modes, sparse
    files, FIFOs - the host's reading of the upper layer leaves the folder as the overlay showed it
    (3,000 random examples passed when this was written; 40 here, the same each run)."""
    found, pool = shared
    folder = tmp_path_factory.mktemp("work") / "repo"
    folder.mkdir()
    for rel, kind in BASE:
        path = folder / rel
        path.mkdir() if kind == "dir" else path.write_text(rel) if kind == "file" else path.symlink_to("/")
    staged = found.start(CAP, [folder], pool)
    [inside] = staged.sources.values()
    for step in work:
        _do(inside, step)
    seen = view(inside)
    assert staged.finish() == "" and staged.lost is None
    assert view(folder) == seen
    shutil.rmtree(folder.parent)  # as root: modes don't stop it

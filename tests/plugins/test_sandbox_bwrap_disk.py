"""Issue 39: the disk cap, nearly free. A Trial's writes land on its capped file system as an
overlay's upper layer over its folders, and only what it changed comes back: the folders end as
the Trial left them, the host's disk takes no more than the cap, the next Trial sees nothing of
the last, and a killed run's layers are swept before its Experiment resumes.

The layer tests need root, loop devices and mkfs.ext4 (the cap itself) and skip with the reason
``assay sandbox check`` gives otherwise; the sandboxed ones need bwrap too.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import trio
from assay.hooks.protocols import Invocation, ProcessResult
from assay.plugins.sandbox_bwrap import disk
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.sessions.reports import ReportFollower

from tests.conftest import cli_env, run_cli, wait_for
from tests.experiment_fixtures import PLUGINS, make_factory, make_suite, scenario
from tests.sandbox_fixtures import bwrap_unavailable

CAP = 64 << 20


@pytest.fixture
def caps() -> disk.DiskCaps:
    found = disk.detect()
    if not found.in_force:
        pytest.skip(found.describe(CAP))
    return found


@pytest.fixture
def bwrap(caps: disk.DiskCaps) -> BwrapBackend:
    if bwrap_unavailable():
        pytest.skip(bwrap_unavailable())
    return BwrapBackend(grace=0.5, poll=0.05, drain=1.0, disk_limit=CAP)  # a pool of its own


def view(folder: Path) -> dict[str, tuple]:
    """Every entry below ``folder`` as a Trial or a reader sees it: kind, mode, content or target, times."""
    seen: dict[str, tuple] = {".": ("dir", os.lstat(folder).st_mode, os.lstat(folder).st_mtime_ns)}
    for parent, folders, files in os.walk(folder):
        for name in folders + files:
            path = Path(parent) / name
            info = os.lstat(path)
            if path.is_symlink():
                what: tuple = ("link", os.readlink(path))
            elif path.is_dir():
                what = ("dir", info.st_mode, info.st_mtime_ns)
            else:
                what = ("file", info.st_mode, path.read_bytes(), info.st_mtime_ns, info.st_nlink)
            seen[str(path.relative_to(folder))] = what
    return seen


def base(folder: Path, outside: Path) -> None:
    """A Trial's folder as the engine lays it out: files, folders, a link within and one leading out."""
    for sub in ("pkg/inner", "docs", "keep", "gone", "emptied"):
        (folder / sub).mkdir(parents=True)
    for name, text in {"pkg/mod.py": "x = 1\n", "pkg/inner/deep.py": "y = 2\n", "docs/guide.md": "guide\n",
                       "keep/k": "k\n", "gone/x": "x\n", "emptied/old": "old\n", "file": "f\n",
                       "untouched.bin": "u" * 4096}.items():
        (folder / name).write_text(text)
    (folder / "within").symlink_to("keep")
    (folder / "out").symlink_to(outside)


def work(inside: Path, rename: bool) -> None:
    """What a Trial might do to its folder: every kind of change an overlay records differently
    (``rename``: and a folder of the base renamed, as ``git mv pkg lib`` does)."""
    (inside / "file").unlink()
    subprocess.run(["rm", "-r", str(inside / "gone")], check=True)
    (inside / "keep" / "k").write_text("changed\n")
    (inside / "new" / "deeper").mkdir(parents=True)
    (inside / "new" / "deeper" / "n").write_text("n\n")
    os.link(inside / "new" / "deeper" / "n", inside / "new" / "hard")
    with open(inside / "sparse", "wb") as out:
        out.truncate(8 << 20)
        out.write(b"end")
    (inside / "out").unlink()
    (inside / "out").write_text("a file where the link out was\n")  # never written through the host's link
    (inside / "within").unlink()
    (inside / "within").mkdir()  # a folder where a link was
    subprocess.run(["rm", "-r", str(inside / "emptied")], check=True)
    (inside / "emptied").mkdir()  # emptied and made again: its old entries hidden
    (inside / "emptied" / "fresh").write_text("fresh\n")
    subprocess.run(["rm", "-r", str(inside / "docs")], check=True)
    (inside / "docs").write_text("a file where a folder was\n")
    os.chmod(inside, 0o750)
    if rename:
        os.rename(inside / "pkg", inside / "lib")
        os.rename(inside / "lib" / "inner", inside / "new" / "inner")


@pytest.mark.parametrize("rename", [False, True], ids=["changes", "and a renamed folder"])
@pytest.mark.parametrize("layered", [True, False], ids=["overlay", "copied where an overlay can't be mounted"])
def test_a_trials_folder_ends_as_the_trial_left_it_and_the_host_keeps_it_untouched_meanwhile(
    caps: disk.DiskCaps, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layered: bool, rename: bool
) -> None:
    """Whatever the Trial did - deletions, edits, new trees, hard links, a sparse file, a file
    where a folder was and the reverse, a link replaced, a folder of its base renamed - its folder
    ends exactly as the Trial saw it; until then the host's folder is as it was, and a link in it
    is never written through."""
    if not layered:
        def refused(*args: object) -> None:
            raise OSError(errno.EINVAL, "no overlay here")
        monkeypatch.setattr(disk, "_overlay", refused)
    outside = tmp_path / "outside.txt"
    outside.write_text("the host's\n")
    folder = tmp_path / "trial" / "repo"
    base(folder, outside)
    before = view(folder)
    staged = caps.start(CAP, [folder], disk.Pool())
    [inside] = staged.sources.values()
    assert (inside.parent.name == "merged") is layered
    work(inside, rename)
    seen = view(inside)
    assert view(folder) == before  # every write went to the capped file system
    assert staged.finish() == ""
    assert view(folder) == seen
    assert outside.read_text() == "the host's\n"
    assert os.stat(folder / "sparse").st_blocks * 512 < 1 << 20  # holes stay holes
    assert os.stat(folder / "new" / "hard").st_ino == os.stat(folder / "new" / "deeper" / "n").st_ino
    assert sorted(p.name for p in folder.parent.iterdir()) == ["repo"]  # nothing left beside it


def test_only_what_the_trial_changed_is_copied_back(caps: disk.DiskCaps, tmp_path: Path) -> None:
    """The cap's cost follows what the Trial wrote, not its folder's size: a file it never touched is
    the very file it was (its inode and change time), one it edited has its edit, one it deleted is
    gone; nothing is left beside the folder."""
    folder = tmp_path / "trial" / "repo"
    base(folder, tmp_path / "outside.txt")
    untouched = os.stat(folder / "untouched.bin")
    staged = caps.start(CAP, [folder], disk.Pool())
    [inside] = staged.sources.values()
    (inside / "keep" / "k").write_text("changed\n")
    (inside / "file").unlink()
    staged.finish()
    after = os.stat(folder / "untouched.bin")
    assert (after.st_ino, after.st_ctime_ns) == (untouched.st_ino, untouched.st_ctime_ns)  # a copy would be new
    assert (folder / "keep" / "k").read_text() == "changed\n"
    assert not (folder / "file").exists()
    assert sorted(p.name for p in folder.parent.iterdir()) == ["repo"]


def test_a_folder_inside_another_is_written_on_the_outer_ones_layer(caps: disk.DiskCaps, tmp_path: Path) -> None:
    """Two writable folders, one inside the other (or one named twice): one layer, the inner folder
    bound from inside it, so its writes are capped too and come back with the outer one's."""
    outer = tmp_path / "trial" / "out"
    (outer / "inner").mkdir(parents=True)
    staged = caps.start(CAP, [outer / "inner", outer, outer], disk.Pool())
    assert len(staged.layers) == 1 and staged.sources[outer / "inner"] == staged.sources[outer] / "inner"
    (staged.sources[outer / "inner"] / "made").write_text("inner's\n")
    assert not (outer / "inner" / "made").exists()
    staged.finish()
    assert (outer / "inner" / "made").read_text() == "inner's\n"


def run(backend: BwrapBackend, trial: Path, code: str) -> tuple[ProcessResult, list[str]]:
    """``code`` (Python) as a Trial's command in ``trial``'s repository, its home beside it."""
    lines: list[str] = []
    invocation = Invocation(
        argv=(sys.executable, "-c", textwrap.dedent(code)), cwd=trial / "repo",
        env={"PATH": "/usr/bin:/bin", "HOME": str(trial / "home")},
        read_write=(trial / "repo", trial / "home"), log_dir=trial,
    )
    return trio.run(functools.partial(backend.run, invocation, timeout=60, on_line=lines.append)), lines


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout


def test_git_mv_of_a_folder_of_the_base_works_in_the_sandbox_and_comes_back(bwrap: BwrapBackend, tmp_path: Path) -> None:
    """An overlay refuses to rename a lower folder unless it records the rename (redirect_dir): an
    agent's ``git mv`` of a folder must work as on any disk, and its commit reach the host."""
    repo, home = tmp_path / "trial" / "repo", tmp_path / "trial" / "home"
    (repo / "src" / "pkg").mkdir(parents=True)
    home.mkdir()
    (repo / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    code = """
        import subprocess
        git = ["git", "-c", "user.name=agent", "-c", "user.email=agent@fake"]
        subprocess.run([*git, "mv", "src/pkg", "src/lib"], check=True)
        subprocess.run([*git, "commit", "-qm", "rename"], check=True)
        print("renamed", flush=True)
    """
    result, lines = run(bwrap, tmp_path / "trial", code)
    assert lines == ["renamed"] and result.exit_code == 0, result.stderr_tail
    assert (repo / "src" / "lib" / "mod.py").read_text() == "x = 1\n" and not (repo / "src" / "pkg").exists()
    assert git(repo, "log", "--format=%s").split() == ["rename", "base"]
    assert git(repo, "status", "--porcelain") == ""


def test_what_a_session_writes_in_its_home_is_followed_while_it_runs(bwrap: BwrapBackend, tmp_path: Path) -> None:
    """Finding: the host follows a CLI's usage reports in its home while its session runs (Codex's
    rate limits, to pause the Experiment at once), but under the disk cap the host's folder shows only
    what the session started with until it ends: nothing was read until then. The follower reads
    the session's live view (the overlay), and after the put-back goes on from where it was."""
    trial, go = tmp_path / "trial", tmp_path / "go"
    for folder in (trial / "repo", trial / "home", go):
        folder.mkdir(parents=True)
    code = f"""
        import os, time
        with open(os.path.join(os.environ["HOME"], "report.jsonl"), "w") as report:
            report.write("first\\n")
        deadline = time.monotonic() + 30
        while not os.path.exists({str(go / "seen")!r}) and time.monotonic() < deadline:
            time.sleep(0.01)  # until the host has read the line (a folder it shares read-only)
        with open(os.path.join(os.environ["HOME"], "report.jsonl"), "a") as report:
            report.write("second\\n")
        print("seen" if os.path.exists({str(go / "seen")!r}) else "never read", flush=True)
    """
    fed: list[str] = []
    follower = ReportFollower(trial / "home", lambda home: [home / "report.jsonl"], fed.append, where=bwrap.live)
    lines: list[str] = []
    invocation = Invocation(argv=(sys.executable, "-c", textwrap.dedent(code)), cwd=trial / "repo",
                            env={"PATH": "/usr/bin:/bin", "HOME": str(trial / "home")},
                            read_write=(trial / "repo", trial / "home"), read_only=(go,), log_dir=trial)

    async def session() -> ProcessResult:
        async with trio.open_nursery() as nursery:
            async def follow() -> None:
                while not fed:
                    follower.poll()
                    await trio.sleep(0.02)
                (go / "seen").write_text("")
            nursery.start_soon(follow)
            result = await bwrap.run(invocation, timeout=60, on_line=lines.append)
            nursery.cancel_scope.cancel()
        return result

    result = trio.run(session)
    assert lines == ["seen"] and fed == ["first"], result.stderr_tail
    assert bwrap.layered == {}  # the session's live views go with it
    follower.poll()  # what the session's last moments wrote, from its put-back folder
    assert fed == ["first", "second"]


def test_the_next_trial_sees_nothing_of_the_last_ones(bwrap: BwrapBackend, tmp_path: Path) -> None:
    """Two Trials of one backend share a capped file system, one after the other: the second sees
    its own folders as the engine made them, and no trace of what the first wrote or deleted."""
    for name in ("first", "second"):
        (tmp_path / name / "repo").mkdir(parents=True)
        (tmp_path / name / "home").mkdir()
        (tmp_path / name / "repo" / f"{name}.txt").write_text(name)
    first = """
        import os, pathlib
        pathlib.Path("secret.txt").write_text("first's")
        pathlib.Path(os.environ["HOME"], ".history").write_text("first's")
        os.unlink("first.txt")
        print("done", flush=True)
    """
    assert run(bwrap, tmp_path / "first", first)[1] == ["done"]
    [reused] = bwrap.disk_pool.idle[CAP]
    second = """
        import json, os
        seen = sorted(os.path.join(parent, name) for folder in (".", os.environ["HOME"])
                      for parent, folders, files in os.walk(folder) for name in folders + files)
        print(json.dumps(seen), flush=True)
    """
    result, lines = run(bwrap, tmp_path / "second", second)
    assert [json.loads(line) for line in lines] == [["./second.txt"]], result.stderr_tail
    assert bwrap.disk_pool.idle[CAP] == [reused]  # the same file system, emptied
    assert (tmp_path / "first" / "repo" / "secret.txt").read_text() == "first's"
    assert not (tmp_path / "first" / "repo" / "first.txt").exists()


def trials(home: Path) -> list[tuple[Path, dict]]:
    return [(p.parent, json.loads(p.read_text())) for p in sorted(home.glob("evals/experiments/*/trials/*/*/attempt-*/trial.json"))]


@pytest.mark.slow
def test_a_trial_that_fills_its_cap_fails_and_the_hosts_disk_takes_no_more_than_the_cap(
    bwrap: BwrapBackend, tmp_path: Path, assay_home: Path
) -> None:
    """A session that writes until the disk is full fills its own file system: its Trial ends as
    its Arm's session says (never void), the cap named in its stderr; what it wrote comes back no
    bigger than the cap, its commit with it, and every other Trial goes on."""
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=1)
    (tmp_path / "scenario").mkdir()
    sc = scenario(tmp_path / "scenario" / "s.json", {"good": {"*": "right"}, "filler": {"*": "right,fill"}})
    result = run_cli(
        assay_home, "experiment", "change", "--factory", str(factory), "--suite", "fixture", "--sandbox", "bwrap",
        "--candidate-model", "filler", "--trials-per-task", "1", "--json", plugins=PLUGINS, FAKE_SCENARIO=str(sc),
        ASSAY_TRIAL_DISK=str(CAP),
    )
    assert result.returncode == 0, result.stderr
    found = {record["arm"]: (folder, record) for folder, record in trials(assay_home)}
    assert found["baseline"][1]["outcome"] == "delivered"
    folder, record = found["candidate"]
    assert (record["outcome"], record["void_cause"]) == ("delivered", None)  # the Arm's reading, never a void
    assert "the Trial filled its disk cap" in (folder / "stderr.log").read_text()
    assert 0 < (folder / "repo" / "filler.bin").stat().st_size <= CAP
    assert (folder / "repo" / "answer.txt").read_text() == "right\n"  # its work before the fill, for grading
    assert git(folder / "repo", "log", "-1", "--format=%s").strip() == "answer"


def start_bwrap(home: Path, factory: Path, sc: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory), "--suite", "fixture",
         "--sandbox", "bwrap", "--trials-per-task", "1", "--candidate-model", "bad", "--json"],
        env=cli_env(home, PLUGINS, FAKE_SCENARIO=str(sc), ASSAY_TRIAL_DISK=str(CAP)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.slow
def test_a_run_killed_mid_trial_leaves_layers_the_resume_sweeps_and_it_resumes(
    bwrap: BwrapBackend, tmp_path: Path, assay_home: Path
) -> None:
    """kill -9 of assay while its Trials write: their overlays and file systems stay mounted, the
    host's folders hold the base only; the resume sweeps them, runs the cut-short Trials afresh in
    new attempt folders, and none of the killed sessions' work reaches them."""
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=1)
    (tmp_path / "scenario").mkdir()
    sc = scenario(tmp_path / "scenario" / "s.json", {"good": {"*": "churn:30,right"}, "bad": {"*": "churn:30,right"}})
    proc = start_bwrap(assay_home, factory, sc)
    pids = Path(f"{sc}.pids")
    killed_disks = lambda: set(Path(tempfile.gettempdir()).glob(f"{disk.PREFIX}{proc.pid}.*"))  # noqa: E731
    layered = lambda: [p for p in killed_disks() if os.path.ismount(p / "merged" / "0")]  # noqa: E731
    wait_for(lambda: len(layered()) == 2 and pids.exists() and len(pids.read_text().split()) >= 2, what="two Trials at work")
    wait_for(lambda: all((p / "mnt" / "0" / "upper" / "churn.txt").exists() for p in layered()), what="their writes")
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    wait_for(lambda: not sandboxed(sc), timeout=10, what="the killed run's sandboxes to end")
    cut = sorted(assay_home.glob("evals/experiments/*/trials/*/*/attempt-0"))
    assert len(cut) == 2 and not any((c / "repo" / "churn.txt").exists() for c in cut)  # the work stayed on the cap
    assert len(layered()) == 2  # left mounted by the kill

    scenario(sc, {"good": {"*": "right"}, "bad": {"*": "right"}})
    resumed = start_bwrap(assay_home, factory, sc)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert killed_disks() == set()
    assert not [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if f"{disk.PREFIX}{proc.pid}." in line]
    found = trials(assay_home)
    assert len(found) == 2
    for folder, record in found:
        assert folder.name == "attempt-1" and record["outcome"] == "delivered"
        assert not (folder / "repo" / "churn.txt").exists()  # nothing of the killed sessions' work
        assert git(folder / "repo", "log", "--format=%s").splitlines() == ["answer", "commit 1"]
    assert all(not any(c.iterdir()) for c in cut)


def sandboxed(sc: Path) -> list[int]:
    """Host pids of the processes a run of scenario ``sc`` started (its sandboxes and their sessions)."""
    wanted = f"FAKE_SCENARIO={sc}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found

"""The added cost per Trial of grading in a sandbox of its own, against grading as it was before.

A small repository (20 files, a base and a fix committed on it, a file left uncommitted) stands
for a process Trial's; its test command is ``python3 -m unittest -q``. Prints medians of
``--runs`` gradings, a pause of ``--gap`` seconds before each, through the bwrap backend:

- before: the host read the Trial's repository through the untrusted-git shadow (descends from
  the base, status), cloned its HEAD onto the host's disk, and ran the tests in a sandbox on that
  clone (bound read-write, so staged onto the Trial's capped disk where there is one);
- now: the code Grader's job (:mod:`assay.sessions.leftovers`): one grading sandbox opens the
  repository, checks descent, status, changes and protected paths, checks HEAD out into its
  scratch space and runs the tests, and the host reads its report back;
- added: the median of now − before over runs that time one of each in turn, against the
  target of 50 ms;

where this machine has the disk cap (loop ext4), the same again with it off, as on a machine
without one (before, the clone was staged onto a Trial's capped disk; a job's scratch folder is a
tmpfs, so it costs the job nothing); then the pieces: the job's Python start with no step, and a
job that only reads the repository.

Run: ``python benchmarks/bench_grading.py [--runs N] [--gap S]`` as a user bwrap works for;
about a minute.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio
from assay.hooks.protocols import Invocation
from assay.plugins.sandbox_bwrap import disk
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.sessions.leftovers import Job, run_job
from assay.storage import files
from assay.storage.untrusted_git import inspected

TARGET_MS = 50.0
TEST = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
COMMAND = ("python3", "-m", "unittest", "-q")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "-C", str(repo), *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def make_trial(folder: Path) -> tuple[Path, str]:
    """A Trial's repository, as a session leaves it: the base, a fix committed, a file uncommitted."""
    repo = folder / "attempt-0" / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for n in range(18):
        (repo / f"module_{n}.py").write_text(f"VALUE = {n}\n" * 20)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text(TEST)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "commit", "-qam", "the fix")
    (repo / "notes.txt").write_text("left behind\n")
    return repo, base


async def before(backend: BwrapBackend, repo: Path, base: str, grade: Path) -> bool:
    """The code Grader before this change: host git on the shadow, a clone on the host, tests in a sandbox."""
    files.remove_tree(grade)
    grade.mkdir()
    clone, home = grade / "head", grade / "home"
    with inspected(repo) as trial:
        assert trial.descends_from(base)
        trial.clone(clone)
        trial.status()
    home.mkdir()
    invocation = Invocation(argv=COMMAND, cwd=clone, env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
                            read_write=(clone, home), log_dir=grade)
    result = await backend.run(invocation, timeout=60, on_line=lambda line: None)
    files.remove_tree(grade)
    return result.exit_code == 0


async def now(backend: BwrapBackend, repo: Path, base: str, grade: Path) -> bool:
    """The code Grader's job now, as plugins/grader_code builds it."""
    job = Job()
    job.open(repo)
    job.descends(base)
    job.status()
    job.changed(base)
    job.protected(base, COMMAND)
    job.checkout()
    ran = job.run(COMMAND, 60)
    report = await run_job(backend, job, grade / "job", timeout=60)
    return report.problem is None and report.steps[ran]["exit_code"] == 0


async def only(backend: BwrapBackend, grade: Path, repo: Path | None) -> None:
    job = Job()
    if repo is not None:
        job.open(repo)
        job.status()
    await run_job(backend, job, grade / "job", timeout=60)


async def amedian_ms(runs: int, gap: float, once: Callable[[], Awaitable[object]]) -> float:
    times = []
    for _ in range(runs):
        await trio.sleep(gap)
        started = time.perf_counter()
        assert await once() is not False, "a grading went wrong"
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def compare(backend: BwrapBackend, runs: int, gap: float, repo: Path, base: str,
                  grade: Path) -> tuple[float, float, float]:
    """Medians of before and now, and of their paired differences: each run times one of each, in
    turn, so both see the same machine (a busy one drifts more than either costs)."""
    await now(backend, repo, base, grade)  # warm the page cache
    await before(backend, repo, base, grade)
    was, is_now = [], []
    for n in range(runs):
        pair = {}
        for name, grading in sorted((("before", before), ("now", now)), reverse=bool(n % 2)):
            await trio.sleep(gap)
            started = time.perf_counter()
            assert await grading(backend, repo, base, grade), "a grading went wrong"
            pair[name] = (time.perf_counter() - started) * 1000
        was.append(pair["before"])
        is_now.append(pair["now"])
    return (statistics.median(was), statistics.median(is_now),
            statistics.median(b - a for a, b in zip(was, is_now)))


async def measure(runs: int, gap: float, folder: Path) -> dict[str, tuple[float, ...]]:
    repo, base = make_trial(folder)
    grade = repo.parent / "grade"
    grade.mkdir()
    backend = BwrapBackend(poll=0.05)
    found = {"as this machine has it": await compare(backend, runs, gap, repo, base, grade)}
    if disk.detect().in_force:
        found["with no disk cap"] = await compare(BwrapBackend(poll=0.05, disk_caps=disk.DiskCaps("none")), runs, gap,
                                                  repo, base, grade)
    found["pieces"] = (await amedian_ms(runs, gap, lambda: only(backend, grade, None)),
                       await amedian_ms(runs, gap, lambda: only(backend, grade, repo)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--gap", type=float, default=0.2, help="seconds of pause before each run")
    args = parser.parse_args()
    check = BwrapBackend().check()
    if not check.works:
        sys.exit(f"bwrap can't run here: {check.reason}")
    with tempfile.TemporaryDirectory(prefix="assay-bench-") as tmp:
        found = trio.run(measure, args.runs, args.gap, Path(tmp))
    empty, read = found.pop("pieces")
    print(f"Code grading per Trial, median of {args.runs}, {args.gap} s apart (a 20-file repository; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for case, (was, is_now, added) in found.items():
        print(f"Disk cap {case}")
        print(f"  before: host clone, tests in a sandbox   {was:7.1f} ms")
        print(f"  now: one grading sandbox, report back    {is_now:7.1f} ms")
        print(f"  added (median of paired differences)     {added:7.1f} ms   target < {TARGET_MS:.0f} ms: "
              + ("met" if added < TARGET_MS else "MISSED"))
    print("Pieces")
    print(f"  a job with no step (bwrap + its Python)  {empty:7.1f} ms")
    print(f"  a job that reads HEAD and status         {read:7.1f} ms")


if __name__ == "__main__":
    main()

"""Pair evidence: each Arm's new test files run on the unchanged base and on the other Arm's final commit.

The new test files are the ones a Trial's final commit adds that match the task's
``process_grading.new_tests`` globs; each runs alone (``process_grading.command``, ``{file}``
replaced) offline under the Bar's timeout. Everything that touches a Trial's repository — reading
its commit, diff and new files, checking it out, laying the other side's tests over it, running
them — is a job in a grading sandbox of its own (:mod:`assay.sessions.leftovers`); the host only
writes the new files it read back (checked paths, into a fresh folder of its own) for the next
job to lay over its checkout, never into a tree a Trial made. The base comes from the task's own
time-safe cache. A run that timed out or whose checkout couldn't be prepared is ``None``: unknown,
never a failure. Results are evidence for the people and the Grader panel, never a Score.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import attrs
from assay.evaltasks.timesafe import CachedRepo
from assay.hooks.protocols import SandboxBackend
from assay.sessions.leftovers import Descends, Diff, Job, LeftoversError, Opened, Ran, Shown, relative_path, run_job
from assay.storage import files
from assay.storage.records import ARMS, Arm, EvalTask, TrialView

OUTPUT_KEPT = 4000  # characters of a run's output kept in the pair's file (its end)
UNREADABLE = "the Trial's repository could not be read"


@attrs.frozen
class TestRun:
    """One new test file of one side: whether it passed on the unchanged base and on the other
    side's final commit (None: it timed out or its checkout couldn't be prepared)."""

    file: str
    base: bool | None
    cross: bool | None
    base_output: str = ""
    cross_output: str = ""


@attrs.frozen
class Side:
    """One Trial of a pair: the attempt judged, its final commit, its diff against base per file,
    and its new test files' runs."""

    attempt: int
    head: str | None
    diff: Mapping[str, str] = attrs.field(factory=dict)
    tests: tuple[TestRun, ...] = ()
    problem: str | None = None


@attrs.frozen
class PairEvidence:
    FORMAT: ClassVar[int] = 1
    UPGRADES: ClassVar[dict] = {}

    pair: str
    task: str
    index: int
    baseline: Side
    candidate: Side

    def side(self, arm: Arm) -> Side:
        return self.baseline if arm == "baseline" else self.candidate

    def attempts(self) -> tuple[int, int]:
        return self.baseline.attempt, self.candidate.attempt


@attrs.frozen
class _Read:
    """What one side's repository yields: its commit, diff, new test files' contents."""

    head: str | None
    diff: dict[str, str]
    tests: dict[str, str]
    problem: str | None = None


def pair_name(task_dir: str, index: int) -> str:
    """A pair's name, the same for both Arms (it names no Arm)."""
    return f"{task_dir}--{index}"


def split_diff(patch: str) -> dict[str, str]:
    """A ``git diff`` split per file, keyed by the file's path after the change."""
    out: dict[str, str] = {}
    for chunk in re.split(r"(?m)^(?=diff --git )", patch):
        if chunk.startswith("diff --git "):
            header = chunk.split("\n", 1)[0]
            out[header.rsplit(" b/", 1)[-1]] = chunk.rstrip("\n") + "\n"
    return out


async def _read(task: EvalTask, view: TrialView, backend: SandboxBackend, timeout: float, folder: Path) -> _Read:
    """One side's final commit, diff against the base and new test files, read in a grading sandbox."""
    job = Job()
    opened, descends = job.open(view.repository), job.descends(task.base)
    diff, shown = job.diff(task.base), job.show(task.base, task.process_grading["new_tests"])
    try:
        report = await run_job(backend, job, folder, timeout=timeout)
        head = report.get(opened, Opened)
        if report.problem or head is None:
            return _Read(None, {}, {}, UNREADABLE)
        if not report.get(descends, Descends).descends:  # type: ignore[union-attr]
            return _Read(head.head, {}, {}, "its final commit does not descend from the base")
        patch, new = report.get(diff, Diff), report.get(shown, Shown)
    except LeftoversError:
        return _Read(None, {}, {}, UNREADABLE)
    assert patch is not None and new is not None
    tests = {path: text for path, text in new.files.items() if _layable(path)}
    text = patch.text + ("\n[... assay cut the diff here: it is longer than the grading sandbox reports ...]\n"
                         if patch.cut else "")
    return _Read(head.head, split_diff(text) if patch.text else {}, tests)


def _layable(path: str) -> bool:
    """A path the host may write a new test file at, in a folder of its own, for a checkout to take."""
    return relative_path(path) and len(path.split("/")) <= 64 and path.split("/")[0] != ".git"


async def _runs(backend: SandboxBackend, command: Sequence[str], tests: Mapping[str, str], source: Path,
                folder: Path, timeout: float) -> dict[str, tuple[bool | None, str]]:
    """Each test file laid over a fresh checkout of ``source``'s HEAD and run alone: passed, or None
    when it could not run to an exit (the checkout couldn't be prepared, or the run timed out)."""
    if not tests:
        return {}
    overlay = folder / "tests"
    for path, text in tests.items():
        files.write_text(overlay / path, text)
    job = Job()
    job.open(source)
    job.checkout()
    job.overlay(overlay, list(tests))
    runs = {path: job.run([a.replace("{file}", path) for a in command], timeout, head=0, tail=OUTPUT_KEPT)
            for path in tests}
    unknown = {path: (None, "the checkout could not be prepared") for path in tests}
    try:
        report = await run_job(backend, job, folder / "job", timeout=timeout)
    except LeftoversError:
        return unknown
    if report.problem:
        return unknown
    out: dict[str, tuple[bool | None, str]] = {}
    for path, step in runs.items():
        run = report.get(step, Ran)
        out[path] = (None, "") if run is None else (
            None if run.timed_out or run.exit_code is None else run.passed, run.output[-OUTPUT_KEPT:])
    return out


async def pair_evidence(task: EvalTask, index: int, name: str, views: Mapping[Arm, TrialView], *,
                        backend: SandboxBackend, timeout: float, base: CachedRepo, workspace: Path) -> PairEvidence:
    """Run both sides' new test files on the base and across; ``workspace`` (emptied) holds the jobs'
    folders while they run."""
    files.remove_tree(workspace)
    workspace.mkdir(parents=True)
    read = {arm: await _read(task, views[arm], backend, timeout, workspace / f"read-{arm}") for arm in ARMS}
    command = task.process_grading["command"]
    sides: dict[Arm, Side] = {}
    for n, arm in enumerate(ARMS):
        other: Arm = ARMS[1 - n]
        mine = read[arm]
        base_runs = await _runs(backend, command, mine.tests, base.path, workspace / f"side-{n}-base", timeout)
        cross_runs = (await _runs(backend, command, mine.tests, views[other].repository, workspace / f"side-{n}-other",
                                  timeout) if read[other].head is not None else
                      {path: (None, "the checkout could not be prepared") for path in mine.tests})
        tests = tuple(TestRun(p, base_runs[p][0], cross_runs[p][0], base_runs[p][1], cross_runs[p][1])
                      for p in mine.tests)
        sides[arm] = Side(views[arm].record.attempt, mine.head, mine.diff, tests, mine.problem)
    files.remove_tree(workspace)
    return PairEvidence(name, task.id, index, sides["baseline"], sides["candidate"])

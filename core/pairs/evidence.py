"""Pair evidence: each Arm's new test files run on the unchanged base and on the other Arm's final commit.

The new test files are the ones a Trial's final commit adds that match the task's
``process_grading.new_tests`` globs; each runs alone (``process_grading.command``, ``{file}``
replaced) offline in the code Grader's sandbox under the Bar's timeout. A Trial's repository
is read only through :func:`~assay.storage.untrusted_git.inspected` (never host git on its
``.git``); the base comes from the task's own time-safe cache. A run that timed out or whose
checkout couldn't be prepared is ``None``: unknown, never a failure. Results are evidence for
the people and the Grader panel, never a Score.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import attrs
import trio
from assay.evaltasks.timesafe import CachedRepo, TimeSafeError, trial_copy
from assay.hooks.protocols import SandboxBackend
from assay.sessions.checks import run_check
from assay.storage import files
from assay.storage.git import GitError
from assay.storage.records import ARMS, Arm, EvalTask, TrialView
from assay.storage.untrusted import UntrustedFileError
from assay.storage.untrusted_git import inspected

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


def _read(task: EvalTask, view: TrialView) -> _Read:
    """Read one side through the untrusted-git shadow: its final commit, diff and new test files."""
    try:
        with inspected(view.repository) as repo:
            if not repo.descends_from(task.base):
                return _Read(repo.head, {}, {}, "its final commit does not descend from the base")
            patch = repo.git("diff", "--no-ext-diff", "--no-textconv", task.base, repo.head)
            added = repo.git("diff", "--name-only", "--diff-filter=A", task.base, repo.head).splitlines()
            patterns = task.process_grading["new_tests"]
            new = [p for p in added if any(fnmatch.fnmatch(p, g) for g in patterns)]
            tests = {p: repo.git("show", f"{repo.head}:{p}") + "\n" for p in new}
            return _Read(repo.head, split_diff(patch) if patch else {}, tests)
    except (GitError, UntrustedFileError, OSError):
        return _Read(None, {}, {}, UNREADABLE)


def _clone_head(view: TrialView) -> Callable[[Path], None]:
    def make(dest: Path) -> None:
        dest.parent.mkdir(parents=True, exist_ok=True)
        with inspected(view.repository) as repo:
            repo.clone(dest)
    return make


def _checkout(make: Callable[[Path], object], dest: Path, tests: Mapping[str, str]) -> bool:
    """A fresh checkout at ``dest`` with ``tests`` written in; False when it can't be made."""
    files.remove_tree(dest)
    try:
        make(dest)
        for path, text in tests.items():
            target = dest / path
            if ".." in Path(path).parts or Path(path).is_absolute():
                return False
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)  # the other side's file of that name (never followed if a link)
            target.write_text(text)
        return True
    except (GitError, TimeSafeError, OSError):
        return False


async def _runs(backend: SandboxBackend, command: Sequence[str], tests: Mapping[str, str], checkout: Path,
                ready: bool, folder: Path, timeout: float) -> dict[str, tuple[bool | None, str]]:
    """Each test file run alone in ``checkout``: passed, or None when it could not run to an exit."""
    out: dict[str, tuple[bool | None, str]] = {}
    for n, path in enumerate(tests):
        if not ready:
            out[path] = (None, "the checkout could not be prepared")
            continue
        argv = [a.replace("{file}", path) for a in command]
        run = await run_check(backend, argv, checkout, folder / f"run-{n}", timeout)
        out[path] = (None if run.timed_out or run.exit_code is None else run.passed, run.output[-OUTPUT_KEPT:])
    return out


async def pair_evidence(task: EvalTask, index: int, name: str, views: Mapping[Arm, TrialView], *,
                        backend: SandboxBackend, timeout: float, base: CachedRepo, workspace: Path) -> PairEvidence:
    """Run both sides' new test files on the base and across; ``workspace`` (emptied) holds the
    checkouts while they run (the git work in a thread, so other Trials' sessions go on meanwhile)."""
    files.remove_tree(workspace)
    workspace.mkdir(parents=True)
    read = {arm: await trio.to_thread.run_sync(_read, task, views[arm]) for arm in ARMS}
    command = task.process_grading["command"]
    sides: dict[Arm, Side] = {}
    for n, arm in enumerate(ARMS):
        other: Arm = ARMS[1 - n]
        mine = read[arm]
        on_base = workspace / f"side-{n}-base"
        on_other = workspace / f"side-{n}-other"
        base_ok = bool(mine.tests) and await trio.to_thread.run_sync(
            _checkout, lambda d: trial_copy(base, d), on_base / "repo", mine.tests)
        other_ok = bool(mine.tests) and read[other].head is not None and await trio.to_thread.run_sync(
            _checkout, _clone_head(views[other]), on_other / "repo", mine.tests)
        base_runs = await _runs(backend, command, mine.tests, on_base / "repo", base_ok, on_base, timeout)
        cross_runs = await _runs(backend, command, mine.tests, on_other / "repo", other_ok, on_other, timeout)
        tests = tuple(TestRun(p, base_runs[p][0], cross_runs[p][0], base_runs[p][1], cross_runs[p][1])
                      for p in mine.tests)
        sides[arm] = Side(views[arm].record.attempt, mine.head, mine.diff, tests, mine.problem)
    files.remove_tree(workspace)
    return PairEvidence(name, task.id, index, sides["baseline"], sides["candidate"])

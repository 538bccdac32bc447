"""The code Grader: mechanical checks that run before any model judges a Trial.

For process tasks it runs the task's test command on the Trial's committed HEAD — in a fresh
clone (so uncommitted files can't count), offline, through the sandbox backend, under the Bar's
timeout — and keeps the output as evidence in the Trial's folder. For review kinds it fails a
Trial that left nothing to judge (no report; no findings pushed) and leaves the rest to the
model Grader. (A review that changed its repository was already made void by the Experiment.)

Implements ``assay_graders``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path

from assay import hookimpl
from assay.evaltasks.timesafe import origin_path
from assay.hooks.protocols import GradingContext
from assay.sessions.checks import run_check
from assay.storage import files
from assay.storage.git import GitError, git
from assay.storage.records import EvalTask, Score, TrialView
from assay.storage.untrusted import MIB, UntrustedFileError, read_texts
from assay.storage.untrusted_git import UntrustedRepoError, inspected

EVIDENCE = "grade"
REPORTS_LIMIT = 4 * MIB  # all of a review's reports together


class CodeGrader:
    name = "code"

    async def grade(self, task: EvalTask, trials: Sequence[TrialView], context: GradingContext) -> Sequence[Score]:
        if task.kind == "process":
            return [await self._grade_process(task, view, context) for view in trials]
        empty = {"code-review": _no_report, "spec-review": _nothing_pushed}.get(task.kind)
        if empty is None:
            return []
        return [self._score(task, view, False, why, []) for view in trials if (why := empty(task, view))]

    async def _grade_process(self, task: EvalTask, view: TrialView, context: GradingContext) -> Score:
        folder = view.folder / EVIDENCE
        files.remove_tree(folder)
        folder.mkdir()
        clone = folder / "head"
        try:
            with inspected(view.repository) as repo:
                if not repo.descends_from(task.base):
                    return self._score(task, view, False, f"the committed HEAD {repo.head[:12]} does not descend "
                                       f"from the base {task.base[:12]} in the Trial's own repository", [])
                repo.clone(clone)
                uncommitted = repo.status()
        except GitError as e:
            return self._score(task, view, False, f"its repository can't be graded: {e}", [])
        notes = [_ignored(uncommitted)] if uncommitted else []
        new_tests = task.criteria.get("new_tests")
        if new_tests and not _adds_matching(clone, task.base, new_tests):
            return self._score(task, view, False, f"no new test matching {', '.join(new_tests)} was committed", notes)
        result = await run_check(context.backend, task.criteria["test_command"], clone, folder, context.timeout)
        files.write_text(folder / "test-output.txt", result.output)
        files.write_text(folder / "notes.txt", "\n".join(notes))
        files.remove_tree(clone)
        command = " ".join(task.criteria["test_command"])
        if result.timed_out:
            why = f"`{command}` timed out after {context.timeout:.0f}s on the committed HEAD"
        elif result.exit_code == 0:
            why = f"`{command}` passed on the committed HEAD"
        else:
            why = f"`{command}` failed on the committed HEAD (exit {result.exit_code})"
        return self._score(task, view, result.passed, why, notes)

    def _score(self, task: EvalTask, view: TrialView, passed: bool, why: str, notes: list[str]) -> Score:
        return Score(
            task=task.id, arm=view.record.arm, index=view.record.index, grader=self.name, passed=passed,
            why=why + ("; " + notes[0].splitlines()[0] if notes else ""),
            evidence=str(Path(view.folder.name) / EVIDENCE),
        )


def _ignored(porcelain: str, shown: int = 5) -> str:
    """One line naming the uncommitted files (the Score's ``why`` keeps only a note's first line)."""
    names = [line.split(maxsplit=1)[-1] for line in porcelain.splitlines()]  # "XY path", the output stripped
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"uncommitted files ignored: {', '.join(names[:shown])}{more}"


def _no_report(task: EvalTask, view: TrialView) -> str | None:
    try:
        if any(text.strip() for text in read_texts(view.folder / "home" / "reports", root=view.folder,
                                                   suffix=".md", limit=REPORTS_LIMIT)):
            return None
    except UntrustedFileError:
        return None  # something was left: the model Grader refuses it and says why
    return "the review left no report (~/reports/*.md)"


def _nothing_pushed(task: EvalTask, view: TrialView) -> str | None:
    try:
        with inspected(origin_path(view.repository), bare=True) as origin:
            pushed = origin.git("rev-list", "--count", f"{task.base}..{origin.head}")
    except UntrustedRepoError as e:
        return f"its origin can't be read: {e}"
    except GitError:
        return "the review pushed nothing to origin"
    return None if int(pushed or 0) > 0 else "the review pushed nothing to origin"


def _adds_matching(clone: Path, base: str, patterns: Sequence[str]) -> bool:
    added = git("diff", "--name-only", "--diff-filter=A", base, "HEAD", cwd=clone).splitlines()
    return any(fnmatch.fnmatch(path, pattern) for path in added for pattern in patterns)


@hookimpl
def assay_graders() -> list[CodeGrader]:
    return [CodeGrader()]

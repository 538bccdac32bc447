"""The code Grader: mechanical checks that run before any model judges a Trial.

For process tasks it runs the task's test command on the Trial's committed HEAD — checked out
afresh in a grading sandbox of its own (so uncommitted files can't count), offline, with a Trial's
walls and caps, under the Bar's timeout — and keeps the output as evidence in the Trial's folder.
Grading uses what the task owns: its sealed files are laid over the checkout, a commit that touches
what grading must own (the sealed files, the runner's configuration, start-up files, a module
shadowing the standard library) fails unless the task allows it, and where the runner writes a
JUnit report the tests must be reported passed, not only exit 0 (docs/eval-tasks.md).
Nothing of the Trial's is read, checked out or run on the host (docs/sandbox.md, threat model):
the job runs through :mod:`assay.sessions.leftovers` and only its small, checked report comes
back. For review kinds it fails a Trial that left nothing to judge (no report; no findings
pushed) and leaves the rest to the model Grader. (A review that changed its repository already
failed in the Experiment.)

Implements ``assay_graders``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from assay import hookimpl
from assay.evaltasks.sealed import sealed_files, sealed_folder
from assay.evaltasks.timesafe import origin_path
from assay.hooks.protocols import GradingContext
from assay.sessions.leftovers import (
    Changed,
    Count,
    Descends,
    Job,
    JUnit,
    LeftoversError,
    Protected,
    Ran,
    Report,
    Status,
    run_job,
)
from assay.storage import files
from assay.storage.records import EvalTask, Score, TrialView
from assay.storage.untrusted import MIB, UntrustedFileError, read_texts

EVIDENCE = "grade"
REPORTS_LIMIT = 4 * MIB  # all of a review's reports together


class CodeGrader:
    name = "code"

    async def grade(self, task: EvalTask, trials: Sequence[TrialView], context: GradingContext) -> Sequence[Score]:
        if task.kind == "process":
            return [await self._grade_process(task, view, context) for view in trials]
        if task.kind == "code-review":
            return [self._score(task, view, False, why, [], None) for view in trials if (why := _no_report(view))]
        if task.kind == "spec-review":
            return [score for view in trials if (score := await self._nothing_pushed(task, view, context))]
        return []

    async def _grade_process(self, task: EvalTask, view: TrialView, context: GradingContext) -> Score:
        folder = view.folder / EVIDENCE
        files.remove_tree(folder)
        folder.mkdir()
        criteria, sealed = task.criteria, sealed_files(task)
        command = criteria["test_command"]
        report_kind = criteria.get("test_report") or ("junit" if any("{junit}" in a for a in command) else None)
        job = Job()
        job.open(view.repository)
        descends, status, changed = job.descends(task.base), job.status(), job.changed(task.base)
        owned = job.protected(task.base, command, sealed=sealed, protect=criteria.get("protected", ()),
                              allow=criteria.get("allow_protected", ()))
        job.checkout()
        if sealed:
            job.overlay(sealed_folder(task), sealed)  # type: ignore[arg-type]
        ran = job.run(command, context.timeout, report=report_kind)
        try:
            report = await run_job(context.backend, job, folder / "job", timeout=context.timeout)
        except LeftoversError as e:
            return self._unreadable(task, view, e, context.backend.name)
        left = report.get(status, Status)
        notes = [_ignored(left)] if left and left.lines else []
        score = self._report_score(task, view, report, descends, changed, owned, notes)
        if score is not None:
            return score
        result = report.get(ran, Ran)
        if result is None:
            return self._score(task, view, False, "its repository can't be graded: the grading sandbox's report "
                               "ends before the test run", notes, report.backend)
        files.write_text(folder / "test-output.txt", result.output)
        files.write_text(folder / "notes.txt", "\n".join(notes))
        judge = _judged_by_listed if criteria.get("must_pass_only") else _judged
        passed, why = judge(" ".join(command), result, context.timeout, criteria.get("must_pass", ()), report_kind)
        return self._score(task, view, passed, why, notes, report.backend)

    def _report_score(self, task: EvalTask, view: TrialView, report: Report, descends: int, changed: int,
                      owned: int, notes: list[str]) -> Score | None:
        """The fail a report shows before any test ran, if it shows one."""
        if report.problem:
            return self._score(task, view, False, f"its repository can't be graded: {report.problem}", notes,
                               report.backend)
        found = report.get(descends, Descends)
        if found is not None and not found.descends:
            return self._score(task, view, False, "its committed HEAD does not descend from the base "
                               f"{task.base[:12]} in the Trial's own repository", notes, report.backend)
        new_tests = task.criteria.get("new_tests")
        added = report.get(changed, Changed)
        if new_tests and not (added and any(fnmatch.fnmatch(p, g) for p in added.paths("A") for g in new_tests)):
            return self._score(task, view, False, f"no new test matching {', '.join(new_tests)} was committed", notes,
                               report.backend)
        touched = report.get(owned, Protected)
        if touched and touched.touched:
            shown = "; ".join(f"{path} ({why})" for path, why in touched.touched[:3])
            more = len(touched.touched) - 3 + touched.more
            return self._score(task, view, False, f"its commit touches what grading owns: {shown}"
                               + (f" and {more} more" if more > 0 else "") + "; the task doesn't allow it",
                               notes, report.backend)
        return None

    def _unreadable(self, task: EvalTask, view: TrialView, error: LeftoversError, backend: str) -> Score:
        """No report: the Trial's fail, or — when the host's own sandbox failed — a Score left pending
        (graded again on the next run), never a judgement the leftovers didn't earn."""
        why = f"its repository can't be graded: {error}"
        if error.host:
            return Score(task.id, view.record.arm, view.record.index, self.name, False, why, pending=why, backend=backend)
        return self._score(task, view, False, why, [], backend)

    async def _nothing_pushed(self, task: EvalTask, view: TrialView, context: GradingContext) -> Score | None:
        """A fail for a spec review that pushed nothing past the base to its origin."""
        job = Job()
        job.open(origin_path(view.repository), bare=True)
        count = job.count(task.base)
        try:
            report = await run_job(context.backend, job, view.folder / EVIDENCE / "job", timeout=context.timeout)
        except LeftoversError as e:
            return self._unreadable(task, view, e, context.backend.name)
        if report.problem:
            return self._score(task, view, False, f"its origin can't be read: {report.problem}", [], report.backend)
        pushed = report.get(count, Count)
        return None if pushed and pushed.count > 0 else self._score(
            task, view, False, "the review pushed nothing to origin", [], report.backend)

    def _score(self, task: EvalTask, view: TrialView, passed: bool, why: str, notes: list[str],
               backend: str | None) -> Score:
        return Score(
            task=task.id, arm=view.record.arm, index=view.record.index, grader=self.name, passed=passed,
            why=why + ("; " + notes[0].splitlines()[0] if notes else ""),
            evidence=str(Path(view.folder.name) / EVIDENCE), backend=backend,
        )


_REPORTS = {"junit": "its JUnit report", "unittest": "its output"}


def _judged(command: str, result: Ran, timeout: float, must_pass: Sequence[str], report_kind: str | None
            ) -> tuple[bool, str]:
    """Pass or fail, and why, from the test run: its exit status, and where the runner reports per-test
    results, that report (every test named in ``must_pass`` passed; else none failed, and some ran)."""
    if result.timed_out:
        return False, f"`{command}` timed out after {timeout:.0f}s on the committed HEAD"
    if result.exit_code != 0:
        return False, f"`{command}` failed on the committed HEAD (exit {result.exit_code})"
    if report_kind is None:
        return True, f"`{command}` passed on the committed HEAD"
    report, said = _report(result, report_kind)
    if report.problem:
        return False, f"`{command}` exited 0 on the committed HEAD, but {report.problem}"
    outcomes = _outcomes(report)
    outcome = _lookup(report, outcomes)
    missing = [t for t in must_pass if outcome(t) != "passed"]
    if missing:
        return False, (f"`{command}` exited 0 on the committed HEAD, but {said} doesn't show {missing[0]} "
                       "passed" + (f" (nor {len(missing) - 1} more)" if len(missing) > 1 else ""))
    failed = [name for name, outcome in outcomes.items() if outcome in ("failed", "error")]
    if failed:
        return False, f"`{command}` exited 0 on the committed HEAD, but {said} shows {failed[0]} failed"
    if not report.cases:
        return False, f"`{command}` exited 0 on the committed HEAD, but {said} shows no test run"
    passed = sum(outcome == "passed" for outcome in outcomes.values())
    return True, f"`{command}` passed on the committed HEAD ({passed} tests reported passed)"


def _judged_by_listed(command: str, result: Ran, timeout: float, must_pass: Sequence[str], report_kind: str | None
                      ) -> tuple[bool, str]:
    """Pass or fail from the per-test results alone (``must_pass_only``, as SWE-bench judges an
    instance): every ``must_pass`` test reported passed (an expected failure counts, as there), whatever
    the exit status and the other tests' results."""
    if result.timed_out:
        return False, f"`{command}` timed out after {timeout:.0f}s on the committed HEAD"
    report, said = _report(result, report_kind or "junit")
    if report.problem:
        return False, f"`{command}` on the committed HEAD: {report.problem}"
    outcome = _lookup(report, _outcomes(report))
    wrong = [(t, outcome(t) or "not run") for t in must_pass if outcome(t) not in ("passed", "xfailed")]
    if wrong:
        (test, outcome), more = wrong[0], len(wrong) - 1
        return False, (f"`{command}` on the committed HEAD: {said} shows {test} {outcome}"
                       + (f" (and {more} more of the tests that must pass not passed)" if more else ""))
    return True, (f"`{command}` on the committed HEAD: {said} shows all {len(must_pass)} tests that must pass passed "
                  f"(exit {result.exit_code}, not counted)")


def _report(result: Ran, report_kind: str) -> tuple[JUnit, str]:
    """The run's per-test results (a problem when there are none) and what they were read from."""
    said = _REPORTS.get(report_kind, "its report")
    return result.junit or JUnit((), f"{said} was not read"), said


_RANK = {"error": 0, "failed": 1, "skipped": 2, "xfailed": 3, "passed": 4}


def _worst(outcomes: dict[str, str], key: str, outcome: str) -> None:
    if key not in outcomes or _RANK.get(outcome, 0) < _RANK.get(outcomes[key], 0):
        outcomes[key] = outcome


def _outcomes(report: JUnit) -> dict[str, str]:
    """Each reported test's outcome by its ``classname.name`` (its name alone, with no classname);
    one reported twice keeps its worst."""
    outcomes: dict[str, str] = {}
    for classname, name, outcome in report.cases:
        _worst(outcomes, f"{classname}.{name}" if classname else name, outcome)
    return outcomes


def _lookup(report: JUnit, outcomes: dict[str, str]) -> Callable[[str], str | None]:
    """A test's outcome from its name in ``must_pass`` (:func:`_test_id`), or None if not reported;
    a bare function name (``test_z``, as some task sets name tests) is the worst of every case so named."""
    bare: dict[str, str] = {}
    for _classname, name, outcome in report.cases:
        _worst(bare, name, outcome)

    def outcome(test: str) -> str | None:
        found = outcomes.get(_test_id(test))
        return found if found is not None or not re.fullmatch(r"\w+(\[.*\])?", test) else bare.get(test)
    return outcome


def _test_id(name: str) -> str:
    """A test's name as a JUnit report gives it (``classname.name``), from a pytest node id
    (``tests/test_x.py::TestY::test_z``), a unittest/Django name (``test_z (tests.test_x.TestY)``)
    or that form itself."""
    named = re.fullmatch(r"(\S+) \(([\w.]+)\)", name)
    if named:
        return f"{named[2]}.{named[1]}"
    if "::" in name:
        path, *rest = name.split("::")
        return ".".join([path.removesuffix(".py").replace("/", "."), *rest])
    return name


def _ignored(status: Status, shown: int = 5) -> str:
    """One line naming the uncommitted files (the Score's ``why`` keeps only a note's first line)."""
    names = [line.split(maxsplit=1)[-1] for line in status.lines]  # "XY path", the output stripped
    left = len(names) - shown + status.more
    more = f" and {left} more" if left > 0 else ""
    return f"uncommitted files ignored: {', '.join(names[:shown])}{more}"


def _no_report(view: TrialView) -> str | None:
    """Reports are read from the Trial's home as data (regular files, no links, bounded): a review's
    report is the one thing of a Trial's the host reads itself (docs/grading.md)."""
    try:
        if any(text.strip() for text in read_texts(view.folder / "home" / "reports", root=view.folder,
                                                   suffix=".md", limit=REPORTS_LIMIT)):
            return None
    except UntrustedFileError:
        return None  # something was left: the model Grader refuses it and says why
    return "the review left no report (~/reports/*.md)"


@hookimpl
def assay_graders() -> list[CodeGrader]:
    return [CodeGrader()]

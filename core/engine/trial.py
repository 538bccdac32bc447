"""One Trial's session in its attempt folder, wherever it runs: this process's trio workers (the
local executor) or a remote executor's host, which then sends back what it left (:mod:`remote`).

The caller gives a fresh repository and holds the session's login slot; this runs the Arm's
session through the sandbox backend and reads its outcome, so that every executor judges a
session exactly alike.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import attrs
from assay.hooks.protocols import ArmRuntime, CannotGoOn, ProcessResult, SandboxBackend, SessionOutcome, TrialContext
from assay.evaltasks import timesafe
from assay.sessions.leftovers import Job, LeftoversError, Opened, Status, run_job
from assay.storage import files
from assay.storage.records import Bar, EvalTask, Outcome, VoidCause
from assay.storage.untrusted import capped_log


# Void causes that mean the plan ran out: the login pauses, however the limit was recognised.
PLAN_LIMIT_CAUSES = frozenset({VoidCause.PLAN_LIMIT, VoidCause.USAGE_LIMIT})
SAID = 300  # characters of what a session said of its plan limit, in the words that name the pause


def plan_limit(outcome: SessionOutcome, key: str) -> str | None:
    """Why the session's login pauses, naming the Trial (``TASK:ARM-INDEX#ATTEMPT``) and what it
    said of its limit; None when it saw no plan limit nor warning."""
    if not (outcome.plan_limit or outcome.void_cause in PLAN_LIMIT_CAUSES):
        return None
    said = " ".join(outcome.diagnostic.split())
    return f"Trial {key}: {said[:SAID] if said else 'a plan-limit warning'}"


class LoginPaused(Exception):
    """The Trial can't start this run: every place of its login is paused at a plan limit (or the
    whole Experiment is paused)."""


@attrs.frozen
class TrialInputs:
    """What a Trial's session runs with, besides its Arm."""

    task: EvalTask
    prompt: str
    folder: Path  # the attempt folder (or a remote host's scratch copy of one)
    repository: Path  # a fresh time-safe copy inside it
    assay_home: Path
    review_only: bool


async def trial_session(runtime: ArmRuntime, inputs: TrialInputs, backend: SandboxBackend, bar: Bar,
                        on_plan_limit: Callable[[], None],
                        slot: AbstractAsyncContextManager[object]) -> tuple[SessionOutcome, ProcessResult]:
    """Run the session to its end, holding ``slot`` (its login's) while it runs, and judge it: the
    sandbox's word first, then the Arm's reading."""
    folder, repository = inputs.folder, inputs.repository
    before = await repository_state(backend, repository, bar.timeout_seconds) if inputs.review_only else None
    home = folder / "home"
    home.mkdir()
    with capped_log(folder / "session.log") as log:
        ctx = TrialContext(
            task=inputs.task, prompt=inputs.prompt, folder=folder, repository=repository, home=home,
            backend=backend, timeout=bar.timeout_seconds, assay_home=inputs.assay_home,
            log=log, on_plan_limit=on_plan_limit, provider_error_limit=bar.void_provider_errors,
            usage_warning=bar.usage_warning,
            writable=tuple(p for p in [timesafe.origin_path(repository)] if p.exists()),
        )
        try:
            async with slot:
                outcome, process = await runtime.run(ctx)
        except OSError as e:  # the session's process never started: the sandbox's fault, not the Arm's
            outcome = SessionOutcome(Outcome.VOID, VoidCause.SANDBOX_FAILED, diagnostic=f"{type(e).__name__}: {e}")
            process = ProcessResult(exit_code=None, backend=backend.name, duration=0.0)
        except CannotGoOn:
            raise
        except Exception as e:  # reading, parsing or walking what it left: the Trial's failure, never the Experiment's
            outcome = SessionOutcome(Outcome.FAILED, diagnostic=f"what the Trial left could not be read: {described(e)}")
            process = ProcessResult(exit_code=None, backend=backend.name, duration=0.0)
    outcome = sandbox_says(outcome, process)
    if process.stderr_tail:  # what a session said before it died: often the only clue
        files.write_text(folder / "stderr.log", process.stderr_tail)
    if before is not None and outcome.outcome is not Outcome.VOID:
        if await repository_state(backend, repository, bar.timeout_seconds) != before:  # the Arm's doing: a void would let it drop the task
            outcome = attrs.evolve(outcome, outcome=Outcome.FAILED, diagnostic=(
                "the review changed its repository (commits or edits); a review must leave it as it found it"))
    return outcome, process


async def repository_state(backend: SandboxBackend, repository: Path, timeout: float) -> tuple[str, tuple[str, ...]]:
    """HEAD and the working tree's status: what a review must leave as it found it, read in a
    grading sandbox (a repository that can't be read so was changed)."""
    job = Job()
    opened, status = job.open(repository), job.status()
    try:
        report = await run_job(backend, job, repository.parent / "state", timeout=timeout)
        head, left = report.get(opened, Opened), report.get(status, Status)
    except LeftoversError as e:
        return "", (f"unreadable: {e}",)
    if report.problem or head is None or left is None:
        return "", (f"unreadable: {report.problem}",)
    return head.head, (*left.lines, f"and {left.more} more")


def described(error: BaseException) -> str:
    """``Type: message`` of an exception, seen through the groups trio's nurseries wrap one in."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"


def sandbox_says(outcome: SessionOutcome, process: ProcessResult) -> SessionOutcome:
    """The sandbox's own void cause (memory cap, failed start, a kill from outside) outranks the
    session's reading; then a budget the session spent on the host (its output, its proxy's log
    lines or connections) makes it the Arm's failure, whatever it claims. A session SIGKILLed from
    inside its sandbox is read as any other ending: the Arm's."""
    if process.void_cause is not None:
        return attrs.evolve(outcome, outcome=Outcome.VOID, void_cause=process.void_cause)
    if process.overrun is not None:
        return attrs.evolve(outcome, outcome=Outcome.FAILED, void_cause=None, plan_limit=False,
                            diagnostic="; ".join(filter(None, [process.overrun, outcome.diagnostic])))
    return outcome

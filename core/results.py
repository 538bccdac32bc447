"""An Experiment's results: per-task pairs from the Scores, and the Verdict computed from them.

Tasks are grouped by Trials per task (the Verdict's difference takes 2k+1 values, so tasks of
different k can't share one Dirichlet). One group gives one Verdict; with several, the
Experiment fails if any group fails, passes if all pass, and is otherwise inconclusive.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from assay.experiments import ExperimentDir
from assay.records import ARMS, Bar, Setup


@attrs.frozen
class TaskResult:
    """One Eval task's pair: each Arm's passes out of its Trials, or dropped as void."""

    task: str
    trials: int
    baseline: int | None
    candidate: int | None
    dropped: bool = False
    complete: bool = True


@attrs.frozen
class ExperimentVerdict:
    """``verdict.json``: the Experiment's Verdict, and the group Verdicts it came from."""

    FORMAT: ClassVar[int] = 1

    verdict: str
    interval: tuple[float, float] | None
    mean: float | None
    more_tasks: int | None
    groups: tuple[Any, ...]
    computed_at: dt.datetime


def task_results(exp: ExperimentDir, setup: Setup, bar: Bar) -> list[TaskResult]:
    out = []
    for task in setup.tasks:
        passes: dict[str, int] = {arm: 0 for arm in ARMS}
        dropped, complete = False, True
        for slot in exp.slots([task]):
            state = exp.slot_state(slot, bar)
            dropped = dropped or state.void_final
            score = exp.score(slot)
            if score is None:
                complete = False
            elif score.passed:
                passes[slot.arm] += 1
        out.append(TaskResult(
            task=task.id, trials=task.trials, dropped=dropped, complete=complete or dropped,
            baseline=None if dropped or not complete else passes["baseline"],
            candidate=None if dropped or not complete else passes["candidate"],
        ))
    return out


def experiment_verdict(exp: ExperimentDir, setup: Setup, bar: Bar) -> ExperimentVerdict:
    from assay import verdict as verdicts  # numpy: only when a Verdict is computed

    results = task_results(exp, setup, bar)
    groups = []
    for k in sorted({r.trials for r in results}):
        pairs = [
            verdicts.TaskPair(r.task, r.baseline or 0, r.candidate or 0, void=r.dropped)
            for r in results if r.trials == k
        ]
        groups.append(verdicts.compute_verdict(pairs, trials_per_task=k, bar=bar))
    return combine(groups)


def combine(groups: Sequence[Any]) -> ExperimentVerdict:
    outcomes = {g.verdict for g in groups}
    overall = "fail" if "fail" in outcomes else "pass" if outcomes == {"pass"} else "inconclusive"
    single = groups[0] if len(groups) == 1 else None
    return ExperimentVerdict(
        verdict=overall,
        interval=single.interval if single else None,
        mean=single.mean if single else None,
        more_tasks=single.more_tasks if single else None,
        groups=tuple(groups),
        computed_at=dt.datetime.now(dt.timezone.utc),
    )


def describe(exp: ExperimentDir, command: Any | None) -> dict[str, Any]:
    """Everything ``assay experiments ID --json`` shows (the Console reads the same)."""
    from assay import formats
    from assay.commands import effective_state

    setup, bar = exp.setup(), exp.bar()
    trials, minutes = [], {arm: 0.0 for arm in ARMS}
    voids: dict[str, dict[str, int]] = {arm: {} for arm in ARMS}
    outcomes: dict[str, dict[str, int]] = {arm: {} for arm in ARMS}
    for slot in exp.slots(setup.tasks):
        score, state = exp.score(slot), exp.slot_state(slot, bar)
        if state.last is not None:
            last = state.last.outcome.value
            outcomes[slot.arm][last] = outcomes[slot.arm].get(last, 0) + 1
        for record in state.records:
            minutes[record.arm] += record.minutes
            if record.void_cause:
                cause = record.void_cause.value
                voids[record.arm][cause] = voids[record.arm].get(cause, 0) + 1
            trials.append({
                **{k: v for k, v in formats.unstructure(record).items() if k != "format"},
                "score": ({"passed": score.passed, "why": score.why, "grader": score.grader,
                           "wrong_finding": score.wrong_finding} if score and record is state.last else None),
                "folder": str(exp.attempt_folder(slot, record.attempt)),
            })
    verdict = None
    if exp.verdict_file.exists():
        verdict = {k: v for k, v in _read_json(exp.verdict_file).items() if k != "format"}
    return {
        "id": exp.id,
        "state": effective_state(command) if command else "created",
        "outcome": command.outcome if command else None,
        "arms": {arm: formats.unstructure(setup.arm(arm)) for arm in ARMS},
        "bar": {k: v for k, v in formats.unstructure(bar).items() if k != "format"},
        "suites": list(setup.suites),
        "sandbox": setup.sandbox,
        "created_at": setup.created_at.isoformat(),
        "tasks": [attrs.asdict(r) for r in task_results(exp, setup, bar)],
        "trials": trials,
        "minutes": {arm: round(m, 3) for arm, m in minutes.items()},
        "void_causes": voids,
        "outcomes": outcomes,
        "verdict": verdict,
    }


def _read_json(path: Any) -> dict[str, Any]:
    import json

    return json.loads(path.read_text())

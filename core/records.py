"""Records that reach disk under an Experiment's folder. Each names its ``FORMAT``.

Format history:
- Bar 1, TrialRecord 1, Score 1: first versions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import ClassVar, Literal

import attrs

from assay.protocols import Outcome, VoidCause

Arm = Literal["baseline", "candidate"]
ARMS: tuple[Arm, Arm] = ("baseline", "candidate")


def _share(name: str):
    def check(_inst: object, _attr: object, value: float) -> None:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be between 0 and 1, got {value}")
    return check


@attrs.frozen
class Bar:
    """Everything that decides the Verdict, fixed before the first Trial (DESIGN.md, "Bar").

    ``prior_weight`` is the prior's total, in pseudo Eval tasks, spread evenly over the
    2k+1 values a task's difference can take.
    """

    FORMAT: ClassVar[int] = 1

    margin: float = attrs.field(default=0.10, validator=_share("margin"))
    level: float = attrs.field(default=0.95, validator=_share("level"))
    prior_weight: float = 1.0
    seed: int = 20261129
    draws: int = 20_000
    trials_per_task: Mapping[str, int] = attrs.field(
        factory=lambda: {"code-review": 3, "process": 3, "spec-review": 1}
    )
    timeout_seconds: float = 3600.0
    void_reruns: int = 2
    max_dropped_share: float = 0.10


@attrs.frozen
class TrialRecord:
    """One attempt of one Trial: one session of one Arm on one Eval task."""

    FORMAT: ClassVar[int] = 1

    task: str
    arm: Arm
    index: int
    attempt: int
    outcome: Outcome
    started_at: dt.datetime
    ended_at: dt.datetime
    backend: str
    void_cause: VoidCause | None = None
    exit_code: int | None = None
    session_id: str | None = None
    turns: int | None = None
    tokens: Mapping[str, int] = attrs.field(factory=dict)
    cost_usd: float | None = None
    final_message: str | None = None
    diagnostic: str = ""

    @property
    def minutes(self) -> float:
        return (self.ended_at - self.started_at).total_seconds() / 60


@attrs.frozen
class Score:
    """A Grader's judgement of one Trial: pass or fail and why, plus a wrong-finding flag."""

    FORMAT: ClassVar[int] = 1

    task: str
    arm: Arm
    index: int
    grader: str
    passed: bool
    why: str
    wrong_finding: bool = False
    borderline: bool = False
    evidence: str | None = None

"""Efficiency in the Bar: does a change meant to save time, tokens or cost save it?

Judged only when the Bar says the change is meant to save one of them, beside the pass-share
Verdict, never in its place: a faster, worse change still fails on accuracy.

*Paired per task*, as the pass share is. A task's measure for an Arm is the mean over its Trials
(minutes, tokens or USD); its difference is the log of the Candidate's over the Baseline's, so a
task where the Candidate takes 0.8 of the Baseline's cost counts the same on a cheap task as on a
dear one. Tasks that dropped out, or where an Arm has no positive measure (a CLI that reports no
cost), are left out.

*Posterior.* The differences are continuous, so the Dirichlet is over the tasks themselves: a
Bayesian bootstrap, ``bar.draws`` seeded draws of Dirichlet(1, …, 1) weights, each giving a
weighted mean log-ratio ``m`` and a saving ``1 - exp(m)`` (the share the Candidate saves on a
typical task). The interval is their equal-tailed ``bar.level`` percentile range.

*Judgement* with the Bar's efficiency margin, the saving the change is meant to bring: the
accuracy rules with the target and the tolerance trading places. fail when the whole interval
is below the margin (it surely saves less than it was meant to, or costs more); pass when the
whole interval is above zero (it surely saves) and some of it at or above the margin;
inconclusive otherwise, and with fewer than :data:`MIN_TASKS` tasks measured.

The same measures and Bar give the same judgement bit for bit (numpy's seeded ``default_rng``, on a
stream of the Bar's seed of its own, so it leaves the pass-share Verdict's draws as they were).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar, Literal, Protocol

import attrs
import numpy as np

Outcome = Literal["pass", "fail", "inconclusive"]
MEASURES = ("time", "tokens", "cost")
UNITS = {"time": "minutes", "tokens": "tokens", "cost": "USD"}
MIN_TASKS = 2


class EfficiencyBar(Protocol):
    """The parts of the Bar the judgement reads (the Bar record is one)."""

    @property
    def level(self) -> float: ...
    @property
    def seed(self) -> int: ...
    @property
    def draws(self) -> int: ...


@attrs.frozen
class EfficiencyPair:
    """One Eval task: each Arm's mean measure over its Trials (None: not measured), or dropped."""

    task: str
    baseline: float | None
    candidate: float | None
    void: bool = False

    @property
    def measured(self) -> bool:
        return (not self.void and self.baseline is not None and self.candidate is not None
                and self.baseline > 0 and self.candidate > 0)


@attrs.frozen
class EfficiencyVerdict:
    """The judgement of the saving, and what shaped it."""

    FORMAT: ClassVar[int] = 1

    measure: str
    verdict: Outcome
    interval: tuple[float, float] | None
    """Of the saving, a share: 0.2 means the Candidate takes a fifth less than the Baseline."""
    saving: float | None
    """The saving at the mean log-ratio over the tasks measured."""
    margin: float
    reason: str
    tasks: int
    measured: int
    baseline_total: float
    candidate_total: float
    level: float
    seed: int
    draws: int


def judge_efficiency(pairs: Sequence[EfficiencyPair], *, measure: str, margin: float,
                     bar: EfficiencyBar) -> EfficiencyVerdict:
    """The efficiency judgement over ``pairs`` (see the module doc)."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    used = [p for p in pairs if p.measured]
    totals = (sum(p.baseline for p in used), sum(p.candidate for p in used))  # type: ignore[misc]
    common = dict(measure=measure, margin=margin, tasks=len(pairs), measured=len(used), baseline_total=totals[0],
                  candidate_total=totals[1], level=bar.level, seed=bar.seed, draws=bar.draws)
    if len(used) < MIN_TASKS:
        return EfficiencyVerdict(verdict="inconclusive", interval=None, saving=None, **common, reason=(
            f"Only {len(used)} of {len(pairs)} Eval tasks have a {measure} measure for both Arms; "
            f"at least {MIN_TASKS} are needed to judge it."))
    logs = np.array([math.log(p.candidate / p.baseline) for p in used])  # type: ignore[operator]
    weights = np.random.default_rng([bar.seed, 3]).dirichlet(np.ones(len(logs)), size=bar.draws)
    savings = 1.0 - np.exp(weights @ logs)
    tail = (1.0 - bar.level) / 2 * 100
    lo, hi = (float(x) for x in np.percentile(savings, [tail, 100 - tail]))
    saving = float(1.0 - math.exp(float(logs.mean())))
    verdict: Outcome = "fail" if hi < margin else "pass" if lo > 0 and hi >= margin else "inconclusive"
    return EfficiencyVerdict(verdict=verdict, interval=(lo, hi), saving=saving, **common,
                             reason=_reason(verdict, lo, hi, margin, measure))


def _reason(verdict: Outcome, lo: float, hi: float, margin: float, measure: str) -> str:
    span = f"the saving in {measure} is between {lo:+.1%} and {hi:+.1%}"
    if verdict == "fail":
        return f"Fail: {span}, all of it below the {margin:.0%} it was meant to save."
    if verdict == "pass":
        return f"Pass: {span}: it surely saves, and may save the {margin:.0%} it was meant to."
    return f"Inconclusive: {span}; it is not sure to save, nor sure to save less than {margin:.0%}."

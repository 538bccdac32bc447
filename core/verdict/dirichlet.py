"""The Verdict: does the Candidate hold up against the Baseline, and how sure are we?

Method (DESIGN.md, "The Verdict").

*Paired differences.* Each Arm runs k Trials on each Eval task. A task's difference is the
Candidate's pass share minus the Baseline's, so it takes one of 2k+1 values, -1 .. +1 in steps
of 1/k. Pairing by task removes the (large) spread between easy and hard tasks.

*Posterior.* The Eval tasks are treated as draws from an unknown distribution over those 2k+1
values. A Dirichlet posterior over that distribution - observed counts plus a prior worth
``bar.prior_weight`` pseudo Eval tasks spread evenly - makes no shape assumption, and depends
only on the 2k+1 counts, so a Verdict costs the same at 10 or 10,000 tasks. ``bar.draws``
seeded draws of the distribution (normalised Gamma variates) give draws of its mean; the
interval is their equal-tailed ``bar.level`` percentile range (2.5th-97.5th at 95%).

*Verdict.* fail when the whole interval is below zero, even inside the margin (a surely worse
change never ships); pass when the whole interval is above -margin and some of it is at or
above zero; inconclusive otherwise, or whenever more than ``bar.max_dropped_share`` of the
tasks dropped out as void (more tasks would not fix that, so no count of them is offered).

*How many more Eval tasks* (when inconclusive). Simulated from the posterior: each simulation
draws a plausible true distribution, then a stream of future tasks from it, so the counts at
every extra n = 1 .. cap are running sums of one stream (common random numbers: the chance
curve is smooth in n). A full 20,000-draw interval for every (n, simulation) would take half an
hour, so the future interval uses the normal approximation to the Dirichlet mean (its exact
mean and variance). The answer is the first n whose chance of a clear Verdict reaches 0.8. It
is approximate: the chance is estimated from ``SIMULATIONS`` runs (standard error ~0.006 near
0.8), so where the chance curve is flat near 0.8 the answer can move by several tasks under
another seed; treat it as "about". Past ``MORE_TASKS_CAP`` it is reported as "more than" the cap.

*Before the start.* :func:`chance_of_clear_verdict` answers the same question for a planned
suite if the Arms are truly equal, with each task's pass probability (shared by both Arms)
uniform on [0, 1] - a middle-of-the-road assumption; suites with many always-pass or
always-fail tasks fare better.

*Reproducible.* The same counts and Bar give the same Verdict bit for bit (numpy's seeded
``default_rng``; the numpy version is recorded because numpy may change its streams). The
draws are made in a canonical orientation of the counts, so swapping the Arms mirrors the
interval exactly.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import ClassVar, Literal, Protocol

import attrs
import numpy as np

Outcome = Literal["pass", "fail", "inconclusive"]
Measure = Literal["pass share", "wrong findings"]

CLEAR_CHANCE = 0.8
"""A count of extra Eval tasks settles it when it gives at least this chance of a clear Verdict."""
SIMULATIONS = 4000
"""Simulated futures behind "how many more" and "before the start"."""
MORE_TASKS_CAP = 1000
""""How many more" looks no further than this many extra Eval tasks."""
_BLOCK = 100  # extra tasks simulated per step of the search, which stops once settled
SMALL_SUITE = 30
"""At or under this many Eval tasks of 1 Trial per task the one-look interval is optimistic, so the
Verdict says so (:func:`small_suite_caveat`)."""
SMALL_SUITE_MISS = 0.11
"""How often the 95% one-look interval missed the true difference there at worst, against 5%:
10.8% (20 tasks, a quarter always failing and a quarter always passing, equal Arms), 10.2% (10
tasks of Beta(0.8, 0.8) pass rates) in ``python benchmarks/bench_looks.py --coverage --suites 2000``
(docs/verdict.md, "What each rule guarantees")."""


class Bar(Protocol):
    """The parts of the Bar a Verdict reads; the Bar record (``assay.storage.records.Bar``) is one.

    Named here, not imported, so the Verdict depends on nothing else in assay.
    """

    @property
    def margin(self) -> float: ...
    @property
    def level(self) -> float: ...
    @property
    def prior_weight(self) -> float: ...
    @property
    def seed(self) -> int: ...
    @property
    def draws(self) -> int: ...
    @property
    def max_dropped_share(self) -> float: ...


@attrs.frozen
class TaskPair:
    """One Eval task's result: how many of each Arm's k Trials counted (passed, or for wrong
    findings, reported one). A void task dropped out for both Arms; its counts are ignored."""

    task: str
    baseline: int = 0
    candidate: int = 0
    void: bool = False


@attrs.frozen
class ArmSummary:
    """One Arm over the tasks that did not drop out."""

    count: int
    """Trials that counted: passes, or for wrong findings, Trials that reported one."""
    trials: int
    share: float | None
    pass_k: float | None
    """Share of tasks where all k Trials passed (pass^k); None for wrong findings."""


@attrs.frozen
class Verdict:
    """A Verdict and everything that shaped it, so it can be recorded and re-checked."""

    FORMAT: ClassVar[int] = 4
    UPGRADES: ClassVar[dict] = {1: dict, 2: dict, 3: dict}

    measure: Measure
    verdict: Outcome
    interval: tuple[float, float]
    """Of the mean difference: Candidate - Baseline pass share, or for wrong findings,
    Baseline - Candidate wrong-finding share (so above zero is better in both)."""
    mean: float
    """Posterior mean of the mean difference."""
    reason: str
    tasks: int
    dropped: tuple[str, ...]
    counts: tuple[int, ...]
    """Tasks per value of the difference the interval is of, from -1 to +1 in steps of 1/k
    (void tasks excluded); at look 1 ``credible_interval(counts, bar=...)`` re-checks the interval
    (a later look's is the confidence sequence over the tasks in order: ``decided_by``)."""
    baseline: ArmSummary
    candidate: ArmSummary
    more_tasks: int | None
    """Extra Eval tasks for a clear Verdict when inconclusive, else None; see the module doc."""
    more_tasks_over_cap: bool
    """True when even ``more_tasks`` (= the cap) is not enough: read it as "more than"."""
    more_tasks_chance: float | None
    trials_per_task: int
    margin: float
    level: float
    prior_weight: float
    seed: int
    draws: int
    max_dropped_share: float
    simulations: int
    more_tasks_cap: int
    numpy_version: str
    look: int = 1
    """How many times the Experiment's tasks have been looked at (1 + its extensions)."""
    decided_by: str = "credible interval"
    """The interval behind ``verdict``: the Dirichlet "credible interval" at the first look, the
    "confidence sequence" (:mod:`assay.verdict.confidence_sequence`) at every later one (and at
    the first under the look rule ``confidence-sequence-only``)."""
    spec_more_tasks: int | None = None
    """When a look rule answers "how many more" (``more_tasks``, judged by the confidence sequence at
    the next look), the spec's own figure beside it: the one-look search of the credible interval
    (977 D55), as ``assay verdict`` gives it. None when ``more_tasks`` is already that figure."""
    spec_more_tasks_over_cap: bool = False
    spec_more_tasks_chance: float | None = None
    batch_size: int | None = None
    """Beside ``more_tasks`` when the next look is judged by the confidence sequence: add this many
    Eval tasks per look, up to ``batch_looks`` looks, for a ``batch_chance`` of a clear Verdict
    with ``batch_tasks`` extra tasks expected (:class:`assay.verdict.confidence_sequence.BatchPlan`)."""
    batch_looks: int | None = None
    batch_chance: float | None = None
    batch_tasks: float | None = None
    caveat: str = ""
    """A warning the interval's own figures don't show: the one-look interval is optimistic on a
    small suite of 1 Trial per task (:data:`SMALL_SUITE`)."""

    @property
    def more_tasks_text(self) -> str:
        """"" when not inconclusive, else "about N" or "more than N"."""
        if self.more_tasks is None:
            return ""
        return f"more than {self.more_tasks}" if self.more_tasks_over_cap else f"about {self.more_tasks}"



def compute_verdict(pairs: Sequence[TaskPair], *, trials_per_task: int, bar: Bar) -> Verdict:
    """Judge the Candidate's pass share against the Baseline's, paired by Eval task."""
    return _judge(pairs, trials_per_task, bar, measure="pass share")


def compute_wrong_findings_verdict(
    wrong: Sequence[TaskPair], *, trials_per_task: int, bar: Bar
) -> Verdict:
    """Judge wrong findings the same way with the sign reversed (fewer is better).

    Each pair counts, per Arm, the Trials that reported at least one wrong finding.
    """
    return _judge(wrong, trials_per_task, bar, measure="wrong findings")


def chance_of_clear_verdict(n_tasks: int, trials_per_task: int, bar: Bar) -> float:
    """The chance that ``n_tasks`` Eval tasks give a clear Verdict if the Arms are equal.

    Shown before an Experiment starts, so a too-small suite is caught before hours of Trials.
    Uses the same normal approximation as the "how many more" search; see the module doc.
    """
    k = _check_k(trials_per_task)
    if n_tasks < 0:
        raise ValueError(f"n_tasks must be 0 or more, got {n_tasks}")
    rng = np.random.default_rng([bar.seed, 2])
    counts = rng.multinomial(n_tasks, _equal_arms_distribution(k), size=SIMULATIONS)
    alpha = counts + _prior(k, bar)
    values = _values(k)
    lo, hi = _normal_interval(alpha @ values, alpha @ values**2, alpha.sum(axis=1), bar.level)
    return float(_clear(lo, hi, bar.margin).mean())


def credible_interval(counts: Sequence[int], *, bar: Bar) -> tuple[float, float]:
    """The Bar's credible interval of the mean difference, from the 2k+1 counts of tasks per
    difference value (-1 .. +1, as ``Verdict.counts``): re-checks a recorded Verdict's interval."""
    if len(counts) < 3 or len(counts) % 2 == 0 or any(c < 0 for c in counts):
        raise ValueError(f"counts must be 2k+1 (k >= 1) numbers of tasks, 0 or more; got {list(counts)}")
    k = len(counts) // 2
    return _interval(np.asarray(counts) + _prior(k, bar), _values(k), bar)


def _judge(pairs: Sequence[TaskPair], k: int, bar: Bar, *, measure: Measure, advise: bool = True,
           interval: tuple[float, float] | None = None, name: str = "interval") -> Verdict:
    """The one-look Verdict; ``advise=False`` leaves "how many more" to the caller (a later look's rule).
    ``interval`` and ``name``: the interval that decides instead, and what the reason calls it (a
    later look's confidence sequence); the Dirichlet draws it would replace are then skipped."""
    k = _check_k(k)
    _check_pairs(pairs, k)
    used = [p for p in pairs if not p.void]
    dropped = tuple(p.task for p in pairs if p.void)
    diffs = _differences(pairs, k, measure) + k
    counts = np.bincount(diffs, minlength=2 * k + 1)
    alpha = counts + _prior(k, bar)
    values = _values(k)
    lo, hi = _interval(alpha, values, bar) if interval is None else interval
    mean = float(alpha @ values / alpha.sum())
    too_many_dropped = _too_many_dropped(pairs, bar)
    outcome = "inconclusive" if too_many_dropped else _outcome(lo, hi, bar.margin)
    more = (None, False, None)
    if outcome == "inconclusive" and not too_many_dropped and advise:
        more = _more_tasks(alpha, values, bar)
    reason = (
        _dropped_reason(len(dropped), len(pairs), bar.max_dropped_share)
        if too_many_dropped
        else _reason(outcome, lo, hi, bar, measure, name=name)
    )
    caveat = small_suite_caveat(len(used), k, bar.level)
    return Verdict(
        measure=measure, verdict=outcome, interval=(lo, hi), mean=mean, reason=reason,
        tasks=len(pairs), dropped=dropped, counts=tuple(int(c) for c in counts),
        baseline=_summary([p.baseline for p in used], k, measure),
        candidate=_summary([p.candidate for p in used], k, measure),
        more_tasks=more[0], more_tasks_over_cap=more[1], more_tasks_chance=more[2],
        trials_per_task=k, margin=bar.margin, level=bar.level, prior_weight=bar.prior_weight,
        seed=bar.seed, draws=bar.draws, max_dropped_share=bar.max_dropped_share,
        simulations=SIMULATIONS, more_tasks_cap=MORE_TASKS_CAP, numpy_version=np.__version__, caveat=caveat,
    )


def small_suite_caveat(tasks: int, k: int, level: float) -> str:
    """The line a one-look Verdict carries when its interval is optimistic: 1 Trial per task and
    at most :data:`SMALL_SUITE` tasks ("" otherwise)."""
    if k != 1 or tasks > SMALL_SUITE:
        return ""
    return (f"Caveat: with 1 Trial per task and {tasks} Eval tasks ({SMALL_SUITE} or fewer), this {level:.0%} "
            f"interval is optimistic: on simulated suites of 10 to {SMALL_SUITE} tasks of 1 Trial, the 95% interval "
            f"missed the true difference up to {SMALL_SUITE_MISS:.0%} of the time, not 5%. For an error rate that "
            "holds at any size, record "
            "--look-rule confidence-sequence-only (its first look is wider), or run more Eval tasks.")


def _differences(pairs: Sequence[TaskPair], k: int, measure: Measure) -> np.ndarray:
    """Each counted task's difference in steps of 1/k (-k .. k), in the order given, signed so
    above zero is better for the Candidate."""
    sign = 1 if measure == "pass share" else -1
    return np.array([sign * (p.candidate - p.baseline) for p in pairs if not p.void], dtype=np.int64)


def _too_many_dropped(pairs: Sequence[TaskPair], bar: Bar) -> bool:
    return bool(pairs) and sum(p.void for p in pairs) / len(pairs) > bar.max_dropped_share


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"trials_per_task must be a whole number of 1 or more, got {k!r}")
    return k


def _check_pairs(pairs: Sequence[TaskPair], k: int) -> None:
    seen: set[str] = set()
    for p in pairs:
        if not p.task:
            raise ValueError("a task has an empty id")
        if p.task in seen:
            raise ValueError(f"task {p.task!r}: appears more than once")
        seen.add(p.task)
        for field in ("baseline", "candidate"):
            value = getattr(p, field)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= k:
                raise ValueError(
                    f"task {p.task!r}: field {field!r}: {value!r} is not a count from 0 to "
                    f"trials_per_task ({k})"
                )


def _values(k: int) -> np.ndarray:
    """The 2k+1 values a task's difference can take, -1 .. +1."""
    return np.arange(-k, k + 1) / k


def _prior(k: int, bar: Bar) -> np.ndarray:
    return np.full(2 * k + 1, bar.prior_weight / (2 * k + 1))


def _interval(alpha: np.ndarray, values: np.ndarray, bar: Bar) -> tuple[float, float]:
    """Equal-tailed interval of ``bar.draws`` seeded posterior draws of the mean difference.

    Drawn in whichever orientation of ``alpha`` sorts first, so mirrored counts reuse the same
    draws, negated: swapping the Arms mirrors the interval exactly.
    """
    flip = tuple(alpha[::-1]) < tuple(alpha)
    a = alpha[::-1] if flip else alpha
    gammas = np.random.default_rng(bar.seed).standard_gamma(a, size=(bar.draws, a.size))
    means = (gammas * values).sum(axis=1) / gammas.sum(axis=1)
    tail = (1 - bar.level) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return (-float(hi), -float(lo)) if flip else (float(lo), float(hi))


def _outcome(lo: float, hi: float, margin: float) -> Outcome:
    if hi < 0:
        return "fail"
    if lo > -margin:
        return "pass"
    return "inconclusive"


def _clear(lo: np.ndarray, hi: np.ndarray, margin: float) -> np.ndarray:
    """Vectorised: would these intervals give pass or fail (see :func:`_outcome`)?"""
    return (hi < 0) | (lo > -margin)


def _normal_interval(
    s1: np.ndarray, s2: np.ndarray, total: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Normal approximation to the interval of a Dirichlet's mean from its sufficient sums:
    ``s1 = sum(alpha * v)``, ``s2 = sum(alpha * v**2)``, ``total = sum(alpha)``."""
    mean = s1 / total
    var = np.maximum(s2 / total - mean**2, 0.0) / (total + 1)
    half = statistics.NormalDist().inv_cdf((1 + level) / 2) * np.sqrt(var)
    return mean - half, mean + half


def _more_tasks(alpha: np.ndarray, values: np.ndarray, bar: Bar) -> tuple[int, bool, float]:
    """(extra tasks, over the cap?, chance there) - the search described in the module doc."""
    rng = np.random.default_rng([bar.seed, 1])
    gammas = rng.standard_gamma(alpha, size=(SIMULATIONS, alpha.size))
    thresholds = np.cumsum(gammas / gammas.sum(axis=1, keepdims=True), axis=1)[:, :-1]
    s1 = np.full(SIMULATIONS, alpha @ values)
    s2 = np.full(SIMULATIONS, alpha @ values**2)
    chance = 0.0
    for start in range(1, MORE_TASKS_CAP + 1, _BLOCK):
        extra = np.arange(start, min(start + _BLOCK, MORE_TASKS_CAP + 1))
        picks = values[_categories(rng.random((SIMULATIONS, extra.size)), thresholds)]
        run1 = s1[:, None] + np.cumsum(picks, axis=1)
        run2 = s2[:, None] + np.cumsum(picks**2, axis=1)
        lo, hi = _normal_interval(run1, run2, alpha.sum() + extra, bar.level)
        chances = _clear(lo, hi, bar.margin).mean(axis=0)
        settled = np.flatnonzero(chances >= CLEAR_CHANCE)
        if settled.size:
            return int(extra[settled[0]]), False, float(chances[settled[0]])
        s1, s2, chance = run1[:, -1], run2[:, -1], float(chances[-1])
    return MORE_TASKS_CAP, True, chance


def _categories(uniforms: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Inverse-CDF categorical draws: row i's uniforms against row i's cumulative shares.
    (One comparison per category on int8 is several times faster than a 3-D comparison.)"""
    picked = np.zeros(uniforms.shape, dtype=np.int8)
    for column in thresholds.T:
        picked += uniforms >= column[:, None]
    return picked


def _equal_arms_distribution(k: int) -> np.ndarray:
    """Distribution of a task's difference when both Arms share a pass probability q ~ U(0, 1):
    P(b, c) = C(k,b) C(k,c) B(b+c+1, 2k-b-c+1), summed over c - b."""
    p = np.zeros(2 * k + 1)
    for b in range(k + 1):
        for c in range(k + 1):
            beta = math.factorial(b + c) * math.factorial(2 * k - b - c) / math.factorial(2 * k + 1)
            p[c - b + k] += math.comb(k, b) * math.comb(k, c) * beta
    return p / p.sum()


def _summary(counts: list[int], k: int, measure: Measure) -> ArmSummary:
    n = len(counts)
    return ArmSummary(
        count=sum(counts),
        trials=n * k,
        share=sum(counts) / (n * k) if n else None,
        pass_k=(sum(c == k for c in counts) / n if n else None) if measure == "pass share" else None,
    )


def _points(x: float) -> str:
    return f"{x * 100:+.1f}"


def _reason(outcome: Outcome, lo: float, hi: float, bar: Bar, measure: Measure, name: str = "interval") -> str:
    span = f"The {bar.level:.0%} {name} [{_points(lo)}, {_points(hi)}] points"
    margin = f"-{bar.margin * 100:g} points (the margin)"
    better = "higher pass share" if measure == "pass share" else "fewer wrong findings"
    if outcome == "fail":
        inside = ", even though it is inside the margin" if lo > -bar.margin else ""
        return f"{span} lies wholly below zero{inside}: the Candidate is surely worse."
    if outcome == "pass":
        return (
            f"{span} lies wholly above {margin} and reaches zero or above: the Candidate is no "
            f"worse than the margin allows (above zero means {better})."
        )
    return f"{span} reaches both below {margin} and up to zero or above: not yet clear."


def _dropped_reason(dropped: int, tasks: int, limit: float) -> str:
    return (
        f"{dropped} of {tasks} Eval tasks ({dropped / tasks:.0%}) dropped out as void, more than "
        f"the Bar allows ({limit:.0%}): inconclusive whatever the interval. Fix what made their "
        "Trials void and run them again."
    )

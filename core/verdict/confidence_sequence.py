"""An interval for the mean paired difference that stays valid at every look (docs/verdict.md).

Why: the Dirichlet interval (:mod:`assay.verdict.dirichlet`) is right for one look at a fixed
suite. A user who follows "how many more" and looks again gets a second chance to pass by luck;
three extensions took a Candidate exactly at the margin from ~3% to ~9% passes (issue 22). So
from the second look on, the decision uses a *betting confidence sequence* (Waudby-Smith &
Ramdas 2023, "Estimating means of bounded random variables by betting", the predictable
plug-in bets of their section 5), whose coverage holds at all task counts at once.

*The bets.* Map each task's difference d in [-1, 1] to x = (d + 1) / 2 in [0, 1], tasks in the
order the Experiment recorded them (fixed before their results). For a candidate mean m, a
gambler betting that the mean is above m holds the capital K+(m) = prod(1 + l_i (x_i - m));
one betting below holds K-(m) = prod(1 - l_i (x_i - m)). The bet l_i is chosen from the tasks
before i only: l_i = min(sqrt(2 log(2/a) / (s2_{i-1} i log(1 + i))), 3/4), with running
estimates mu_i = (1/2 + sum x) / (i + 1), s2_i = (1/4 + sum (x_j - mu_j)^2) / (i + 1). If the
true mean is m, each capital is a non-negative martingale starting at 1, so by Ville's
inequality it ever reaches 2/a with chance at most a/2. The sequence excludes m (below) once
K+(m) has reached 2/a at any task count so far, and (above) once K-(m) has; each side errs with
chance at most a/2 however many looks are taken (a = 1 - level). Because the bets don't depend
on m, K+(m) falls as m rises: what is excluded below is everything under one bound.

*On a grid.* The bounds are the lowest and highest candidate means not excluded on a grid of
step 0.001 that holds -margin and 0 exactly, so "the interval lies above -margin" and "below
zero" are the exact tests; the true bounds lie within one step outside the reported ones.

*How many more at the next look.* As the Dirichlet search (same posterior simulations, same
0.8 chance), but each simulated future is judged by this sequence: the capitals at -margin and
0 are carried on from the tasks already run, through the simulated new ones.

*Or a few at a time.* Because the sequence is valid at every look, a user may add a batch of b
tasks, look, and add b more until it is clear, at no cost to the guarantee. The same simulated
futures give each one's first task count at which the sequence is clear, T; a plan of b tasks
per look for at most ``LOOKS_AHEAD`` looks settles when T <= b * LOOKS_AHEAD and uses
b * min(ceil(T / b), LOOKS_AHEAD) tasks. The batch plan is the b (at most the one-jump answer)
whose expected tasks are fewest among those settling with a CLEAR_CHANCE chance (issue 34: the
jump sized for 80% at the next look uses a quarter to a third more tasks for the same power).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import attrs
import numpy as np

from assay.verdict.dirichlet import CLEAR_CHANCE, MORE_TASKS_CAP, SIMULATIONS, _categories

GRID_STEP = 0.001
"""Step of the candidate means the sequence is computed on, in mean difference (0.1 point)."""
MAX_BET = 0.75
"""Largest bet; keeps every capital above a quarter of itself after any one task."""
LOOKS_AHEAD = 4
"""Looks a batch plan may take to reach CLEAR_CHANCE (a group-sequential plan's usual 4)."""
_BLOCK = 100


def interval(diffs: Sequence[float], *, level: float, margin: float) -> tuple[float, float]:
    """The confidence sequence's interval of the mean difference after ``diffs`` (in order).

    Each bound excludes what any task count so far excluded (the running intersection, valid
    because the sequence is valid at all counts at once); see the module doc.
    """
    grid = _grid(margin)
    x = (np.asarray(diffs, dtype=float) + 1) / 2
    if x.size == 0:
        return -1.0, 1.0
    threshold = math.log(2 / (1 - level))
    bets = _bets(x, level)
    m = (grid + 1) / 2
    below = _excluded(bets, x, m, threshold, sign=1)
    above = _excluded(bets, x, m[::-1], threshold, sign=-1)
    if below + above >= grid.size:  # the two sides crossed (a mean that drifted): the side that excluded more decides
        return (1.0, 1.0) if below >= above else (-1.0, -1.0)
    return float(grid[below]), float(grid[-1 - above])


@attrs.frozen
class State:
    """What the sequence carries from the tasks so far into simulated futures (for one look)."""

    tasks: int
    total: float
    """Sum of x over the tasks."""
    spread: float
    """Sum of (x_i - mu_i)^2 over the tasks."""
    capital_low: float
    """log K+(-margin) after the tasks."""
    capital_high: float
    """log K-(0) after the tasks."""
    reached: bool
    """Whether either capital already reached the threshold at some task count."""


def state(diffs: Sequence[float], *, level: float, margin: float) -> State:
    """The running sums and the two capitals that decide a clear Verdict, after ``diffs``."""
    x = (np.asarray(diffs, dtype=float) + 1) / 2
    bets = _bets(x, level)
    mu = _means(np.cumsum(x), np.arange(1, x.size + 1))
    low, high = (1 - margin) / 2, 0.5
    run_low, run_high = np.cumsum(np.log1p(bets * (x - low))), np.cumsum(np.log1p(-bets * (x - high)))
    threshold = math.log(2 / (1 - level))
    return State(
        tasks=int(x.size), total=float(x.sum()), spread=float(((x - mu) ** 2).sum()),
        capital_low=float(run_low[-1]) if x.size else 0.0, capital_high=float(run_high[-1]) if x.size else 0.0,
        reached=bool((run_low >= threshold).any() or (run_high >= threshold).any()),
    )


@attrs.frozen
class BatchPlan:
    """Add ``size`` tasks per look, up to ``looks`` looks: a ``chance`` of a clear Verdict by then,
    ``tasks`` extra tasks expected (a clear look ends it early)."""

    size: int
    looks: int
    chance: float
    tasks: float


def more_tasks(
    alpha: np.ndarray, values: np.ndarray, now: State, *, level: float, margin: float, seed: int, plan: bool = True
) -> tuple[int, bool, float, BatchPlan | None]:
    """(extra tasks, over the cap?, chance there, batch plan): the fewest extra tasks with a
    CLEAR_CHANCE of a clear Verdict at the next look under the sequence, simulated from the
    Dirichlet posterior ``alpha`` over ``values``, the capitals starting from ``now``; and from
    the same futures, the batch plan (None past the cap, or without ``plan``: the futures then
    stop at the jump, which is the same either way). See the module doc."""
    looks = LOOKS_AHEAD if plan else 1
    rng = np.random.default_rng([seed, 3])
    gammas = rng.standard_gamma(alpha, size=(SIMULATIONS, alpha.size))
    thresholds = np.cumsum(gammas / gammas.sum(axis=1, keepdims=True), axis=1)[:, :-1]
    chance, jump = 0.0, None
    first = np.full(SIMULATIONS, np.inf)  # each future's first extra count at which it is clear
    for extra, reached in _futures(_sampler(rng, values, thresholds), now, level=level, margin=margin,
                                   upto=MORE_TASKS_CAP):
        new = np.isinf(first) & reached[:, -1]
        first[new] = extra[reached[new].argmax(axis=1)]
        if jump is None:
            chances = reached.mean(axis=0)
            settled = np.flatnonzero(chances >= CLEAR_CHANCE)
            if settled.size:
                jump = int(extra[settled[0]]), float(chances[settled[0]])
            else:
                chance = float(chances[-1])
        if jump is not None and extra[-1] >= min(MORE_TASKS_CAP, looks * jump[0]):
            return jump[0], False, jump[1], _batch_plan(first, jump[0], int(extra[-1])) if plan else None
    return MORE_TASKS_CAP, True, chance, None


def _batch_plan(first: np.ndarray, jump: int, simulated: int) -> BatchPlan:
    """The batch size of fewest expected tasks that settles with a CLEAR_CHANCE chance within
    LOOKS_AHEAD looks, from each future's first clear count (inf: not within ``simulated``, which
    is at least min(cap, LOOKS_AHEAD x jump)). The size ceil(jump / LOOKS_AHEAD) always qualifies:
    its last look comes at or after the jump's one look."""
    sizes = np.arange(1, min(jump, simulated // LOOKS_AHEAD) + 1)
    looks_needed = np.ceil(first[None, :] / sizes[:, None])
    chances = (looks_needed <= LOOKS_AHEAD).mean(axis=1)
    tasks = (sizes[:, None] * np.minimum(looks_needed, LOOKS_AHEAD)).mean(axis=1)
    best = int(np.argmin(np.where(chances >= CLEAR_CHANCE, tasks, np.inf)))
    return BatchPlan(int(sizes[best]), LOOKS_AHEAD, float(chances[best]), float(tasks[best]))


def chance_of_clear(probabilities: np.ndarray, values: np.ndarray, n_tasks: int, *, level: float, margin: float,
                    seed: int) -> float:
    """The chance the sequence is clear after ``n_tasks`` tasks whose differences take ``values``
    with ``probabilities``: the before-the-start figure when the sequence judges the first look."""
    if n_tasks <= 0:
        return 0.0
    rng = np.random.default_rng([seed, 4])
    thresholds = np.broadcast_to(np.cumsum(probabilities)[:-1], (SIMULATIONS, probabilities.size - 1))
    for _extra, reached in _futures(_sampler(rng, values, thresholds), state((), level=level, margin=margin),
                                    level=level, margin=margin, upto=n_tasks):
        pass
    return float(reached[:, -1].mean())


def _sampler(rng: np.random.Generator, values: np.ndarray,
             thresholds: np.ndarray) -> Callable[[int, np.ndarray], np.ndarray]:
    """n more differences for the simulated futures ``rows``, each drawn by its row of cumulative
    shares. Every future's uniforms are drawn, asked for or not, so a future's draws don't depend
    on which others are still open."""
    return lambda n, rows: values[_categories(rng.random((SIMULATIONS, n))[rows], thresholds[rows])]


def _futures(draw: Callable[[int, np.ndarray], np.ndarray], now: State, *, level: float, margin: float,
             upto: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Simulated futures of up to ``upto`` extra tasks after ``now``, ``draw(n, rows)`` giving the
    futures ``rows``' next n differences: yields, a block of extra tasks at a time, (the extra task
    counts, per future and count: has the sequence been clear by then?). A future once clear stays
    clear, so only the open ones are carried on (most of the work, once most are clear)."""
    threshold = math.log(2 / (1 - level))
    low, high = (1 - margin) / 2, 0.5
    shape = (SIMULATIONS,)
    total, spread = np.full(shape, now.total), np.full(shape, now.spread)
    cap_low, cap_high = np.full(shape, now.capital_low), np.full(shape, now.capital_high)
    done = np.full(shape, now.reached)
    for start in range(1, upto + 1, _BLOCK):
        extra = np.arange(start, min(start + _BLOCK, upto + 1))
        live = np.flatnonzero(~done)
        x = (draw(extra.size, live) + 1) / 2
        t = now.tasks + extra  # the task count each new task makes
        sums = total[live, None] + np.cumsum(x, axis=1)
        mu = _means(sums, t)
        spreads = spread[live, None] + np.cumsum((x - mu) ** 2, axis=1)
        before = np.concatenate([spread[live, None], spreads[:, :-1]], axis=1)
        bets = _bet((0.25 + before) / t, t, level)  # s2_{t-1}, from the tasks before t
        run_low = cap_low[live, None] + np.cumsum(np.log1p(bets * (x - low)), axis=1)
        run_high = cap_high[live, None] + np.cumsum(np.log1p(-bets * (x - high)), axis=1)
        reached = np.ones((SIMULATIONS, extra.size), dtype=bool)
        reached[live] = np.logical_or.accumulate((run_low >= threshold) | (run_high >= threshold), axis=1)
        yield extra, reached
        total[live], spread[live], cap_low[live], cap_high[live] = (
            sums[:, -1], spreads[:, -1], run_low[:, -1], run_high[:, -1])
        done = reached[:, -1].copy()


def _grid(margin: float) -> np.ndarray:
    steps = round(2 / GRID_STEP)
    return np.unique(np.concatenate([np.linspace(-1.0, 1.0, steps + 1), [-margin, 0.0]]))


def _means(sums: np.ndarray, t: np.ndarray) -> np.ndarray:
    """mu_t = (1/2 + sum of the first t) / (t + 1)."""
    return (0.5 + sums) / (t + 1)


def _bet(s2_before: np.ndarray, t: np.ndarray, level: float) -> np.ndarray:
    """The predictable plug-in bet for task t from the variance estimate before it."""
    raw = np.sqrt(2 * math.log(2 / (1 - level)) / (s2_before * t * np.log1p(t)))
    return np.minimum(raw, MAX_BET)


def _bets(x: np.ndarray, level: float) -> np.ndarray:
    """Every task's bet, from the tasks before it only."""
    t = np.arange(1, x.size + 1)
    mu = _means(np.cumsum(x), t)
    spread = np.concatenate([[0.0], np.cumsum((x - mu) ** 2)[:-1]])
    return _bet((0.25 + spread) / t, t, level)


def _excluded(bets: np.ndarray, x: np.ndarray, m: np.ndarray, threshold: float, *, sign: int) -> int:
    """How many of the candidate means ``m``, from the first on, the capital betting ``sign`` (above:
    +1, below: -1) has ever reached the threshold at. They are a run from the first: the bets don't
    depend on m, so K+ falls as m rises (and K- as it falls), which lets a bisection find the run's
    end in a dozen capitals instead of one per grid point."""
    lo, hi = 0, m.size  # m[:lo] excluded, m[hi:] not
    while lo < hi:
        mid = (lo + hi) // 2
        if (np.cumsum(np.log1p(sign * bets * (x - m[mid]))) >= threshold).any():
            lo = mid + 1
        else:
            hi = mid
    return lo

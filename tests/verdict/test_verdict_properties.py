"""Properties of the Verdict that must hold for any results (hypothesis), and its calibration."""

from __future__ import annotations

import numpy as np
import pytest
from assay.storage import formats
from assay.storage.records import Bar
from assay.verdict import TaskPair, compute_verdict, credible_interval
from hypothesis import given, settings
from hypothesis import strategies as st

# Derandomized so that CI sees the same examples every run.
SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=40)

ks = st.sampled_from([1, 3])
seeds = st.integers(min_value=0, max_value=2**32 - 1)


@st.composite
def suites(draw: st.DrawFn) -> tuple[int, list[TaskPair]]:
    k = draw(ks)
    rows = draw(st.lists(st.tuples(st.integers(0, k), st.integers(0, k), st.booleans()), max_size=40))
    return k, [TaskPair(f"t{i}", b, c, void and i % 5 == 0) for i, (b, c, void) in enumerate(rows)]


@st.composite
def counts(draw: st.DrawFn) -> list[int]:
    k = draw(ks)
    return draw(st.lists(st.integers(0, 60), min_size=2 * k + 1, max_size=2 * k + 1))


@pytest.mark.slow
@SETTINGS
@given(suites(), seeds)
def test_swapping_the_arms_mirrors_the_interval(suite: tuple[int, list[TaskPair]], seed: int) -> None:
    k, pairs = suite
    bar = Bar(seed=seed)
    v = compute_verdict(pairs, trials_per_task=k, bar=bar)
    swapped = compute_verdict([TaskPair(p.task, p.candidate, p.baseline, p.void) for p in pairs], trials_per_task=k, bar=bar)
    if v.counts == v.counts[::-1]:  # a symmetric input: its interval is symmetric up to draw noise
        assert abs(v.interval[0] + v.interval[1]) < 0.05
    else:  # the same draws, negated: an exact mirror
        assert swapped.interval == (-v.interval[1], -v.interval[0])
    assert swapped.mean == pytest.approx(-v.mean, abs=1e-12)
    assert (swapped.baseline, swapped.candidate) == (v.candidate, v.baseline)


@SETTINGS
@given(counts(), seeds)
def test_adding_a_task_of_difference_plus_one_never_lowers_the_interval(c: list[int], seed: int) -> None:
    bar = Bar(seed=seed)
    lo, hi = credible_interval(c, bar=bar)
    lo_more, hi_more = credible_interval([*c[:-1], c[-1] + 1], bar=bar)
    assert lo_more >= lo and hi_more >= hi


@pytest.mark.slow
@SETTINGS
@given(suites(), seeds)
def test_the_same_inputs_and_seed_give_the_same_verdict(suite: tuple[int, list[TaskPair]], seed: int) -> None:
    k, pairs = suite
    first = compute_verdict(pairs, trials_per_task=k, bar=Bar(seed=seed))
    again = compute_verdict(list(pairs), trials_per_task=k, bar=Bar(seed=seed))
    assert first == again and formats.unstructure(first) == formats.unstructure(again)


@settings(derandomize=True, database=None, deadline=None, max_examples=150)
@given(counts(), seeds, st.floats(0.5, 0.99))
def test_the_interval_lies_within_minus_one_and_one(c: list[int], seed: int, level: float) -> None:
    lo, hi = credible_interval(c, bar=Bar(seed=seed, level=level, draws=1000))
    assert -1.0 <= lo <= hi <= 1.0


@pytest.mark.slow
def test_the_95_percent_interval_covers_the_true_mean_difference_95_percent_of_the_time() -> None:
    """1,000 simulated suites of 30 tasks, drawn from known distributions of the difference."""
    truths = [  # shares of tasks per difference value, -1 .. +1
        [0.01, 0.06, 0.2, 0.46, 0.2, 0.06, 0.01],  # equal Arms
        [0.02, 0.05, 0.13, 0.4, 0.2, 0.12, 0.08],  # the Candidate is better
        [0.1, 0.15, 0.2, 0.35, 0.1, 0.07, 0.03],  # the Candidate is worse
        [0.2, 0.5, 0.3],  # one Trial per task
    ]
    rng = np.random.default_rng(2026)
    covered = 0
    for i in range(1000):
        truth = np.array(truths[i % len(truths)])
        true_mean = truth @ np.linspace(-1, 1, truth.size)
        lo, hi = credible_interval(rng.multinomial(30, truth).tolist(), bar=Bar(seed=i))
        covered += lo <= true_mean <= hi
    assert 920 <= covered <= 980, covered

"""Recorded Verdicts never change: the same counts and Bar give the same numbers, bit for bit.

Issue 34 adds advice and caveats beside the Verdict; these figures were taken from the code
before it, so any change to an interval, an outcome, "how many more" or the before-the-start
figure fails here.
"""

from __future__ import annotations

import pytest
from assay.storage.records import Bar
from assay.verdict import chance_of_clear_first_look, compute_verdict, verdict_at_look

from tests.verdict.test_verdict import tasks

BAR = Bar(seed=7)
CASES = {
    "k3_wide": (tasks((0, 10), (-1, 5), (1, 5)), 3),
    "k3_margin": (tasks((0, 20), (1, 6), (-1, 4)), 3),
    "k1_small": (tasks((0, 12), (-1, 5), (1, 4), k=1), 1),
    "k3_tie": (tasks((0, 100), (-3, 50), (3, 50)), 3),
}
SPEC = {
    "k3_wide": ("inconclusive", (-0.11629736463931395, 0.11473424590755837), 33, 0.809),
    "k3_margin": ("pass", (-0.058592632686829065, 0.0992256184795726), None, None),
    "k1_small": ("inconclusive", (-0.3169764806934578, 0.22386570865931488), 206, 0.80075),
    "k3_tie": ("pass", (-0.0985730453203584, 0.09741140334592593), None, None),
}
SEQUENCE = {  # the confidence sequence's interval and "how many more" for the next look under it
    "k3_wide": ((-0.548, 0.548), 145, 0.802),
    "k3_margin": ((-0.33199999999999996, 0.377), 84, 0.8055),
    "k1_small": ((-0.627, 0.5330000000000001), 561, 0.8),
    "k3_tie": ((-0.121, 0.15399999999999991), 552, 0.8005),
}


@pytest.mark.parametrize("name", CASES)
def test_the_one_look_verdict_is_as_recorded(name: str) -> None:
    pairs, k = CASES[name]
    v = compute_verdict(pairs, trials_per_task=k, bar=BAR)
    assert (v.verdict, v.interval, v.more_tasks, v.more_tasks_chance) == SPEC[name]


@pytest.mark.parametrize("name", CASES)
def test_every_look_under_each_rule_is_as_recorded(name: str) -> None:
    pairs, k = CASES[name]
    spec_verdict, spec_interval, _, _ = SPEC[name]
    interval, more, chance = SEQUENCE[name]
    first = verdict_at_look(pairs, trials_per_task=k, bar=BAR, look=1)
    assert (first.verdict, first.interval) == (spec_verdict, spec_interval)
    if spec_verdict == "inconclusive":
        assert (first.more_tasks, first.more_tasks_over_cap, first.more_tasks_chance) == (more, False, chance)
    for look, sequence_from in ((2, 2), (1, 1)):
        v = verdict_at_look(pairs, trials_per_task=k, bar=BAR, look=look, sequence_from=sequence_from)
        assert (v.verdict, v.interval, v.more_tasks, v.more_tasks_over_cap, v.more_tasks_chance) == (
            "inconclusive", interval, more, False, chance)


def test_the_before_the_start_figures_are_as_recorded() -> None:
    figures = {(n, k): (chance_of_clear_first_look(n, k, BAR), chance_of_clear_first_look(n, k, BAR, sequence_from=1))
               for n in (30, 150) for k in (1, 3)}
    assert figures == {(30, 1): (0.19975, 0.00375), (30, 3): (0.4045, 0.00025),
                       (150, 1): (0.59975, 0.27075), (150, 3): (0.97875, 0.7005)}


@pytest.mark.parametrize("name", ["k3_wide", "k1_small"])
def test_without_the_figures_beside_it_the_look_rules_figure_is_the_same(name: str) -> None:
    """``beside=False`` (the benchmark's users who follow the jump) skips the spec's figure and the
    batch plan, never changes the jump."""
    pairs, k = CASES[name]
    full = verdict_at_look(pairs, trials_per_task=k, bar=BAR, look=2)
    alone = verdict_at_look(pairs, trials_per_task=k, bar=BAR, look=2, beside=False)
    assert alone.batch_size is None and alone.spec_more_tasks is None and full.batch_size is not None
    assert (alone.more_tasks, alone.more_tasks_chance) == (full.more_tasks, full.more_tasks_chance) == SEQUENCE[name][1:]

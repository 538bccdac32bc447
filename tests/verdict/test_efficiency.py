"""Efficiency judged beside the pass share (977 US11, D59): known cases with fixed seeds."""

from __future__ import annotations

import attrs
import pytest
from assay.storage.records import Bar
from assay.verdict import EfficiencyPair, TaskPair, compute_verdict, judge_efficiency

BAR = Bar(seed=7, efficiency="cost", efficiency_margin=0.2)


def pairs(*ratios: float, baseline: float = 1.0) -> list[EfficiencyPair]:
    """Tasks whose Candidate takes ``ratio`` times the Baseline's measure (the Baseline's differs per task)."""
    return [EfficiencyPair(f"t{i}", baseline * (i + 1), baseline * (i + 1) * r) for i, r in enumerate(ratios)]


def judge(given: list[EfficiencyPair], margin: float = 0.2):
    return judge_efficiency(given, measure="cost", margin=margin, bar=BAR)


def test_a_sure_saving_of_the_margin_passes_and_a_sure_shortfall_fails() -> None:
    """977 US11: 'efficiency shown beside accuracy but kept out of the Bar, unless a change is meant to
    save time or cost'; D59: 'It stays out of the Bar unless the Bar says the change is meant to save
    time or cost.' Meant to save 20%: saving 30-40% on every task passes; saving 0-10% surely falls
    short and fails; costing 10% more fails too."""
    saved = judge(pairs(*[0.6, 0.7, 0.65, 0.62, 0.7, 0.68] * 3))
    assert saved.verdict == "pass" and 0 < saved.interval[0] and saved.interval[1] >= 0.2
    assert 0.3 < saved.saving < 0.4 and saved.measured == 18
    short = judge(pairs(*[0.95, 0.9, 1.0, 0.92, 0.97, 0.93] * 3))
    assert short.verdict == "fail" and short.interval[1] < 0.2
    dearer = judge(pairs(*[1.1, 1.15, 1.05] * 5))
    assert dearer.verdict == "fail" and dearer.interval[1] < 0
    assert "below the 20% it was meant to save" in dearer.reason


def test_a_saving_that_may_or_may_not_be_there_is_inconclusive() -> None:
    mixed = judge(pairs(0.5, 1.3, 0.7, 1.1, 0.6, 1.2))
    assert mixed.verdict == "inconclusive" and mixed.interval[0] < 0 < 0.2 < mixed.interval[1]
    few = judge([EfficiencyPair("t1", 1.0, 0.5), EfficiencyPair("t2", None, 0.5), EfficiencyPair("t3", 1.0, 0.4, void=True)])
    assert few.verdict == "inconclusive" and few.interval is None and few.measured == 1
    assert few.reason.startswith("Only 1 of 3 Eval tasks have a cost measure for both Arms")


def test_paired_per_task_a_dear_task_weighs_no_more_than_a_cheap_one() -> None:
    """Each task counts by its ratio: the same 0.5 on a task 100 times dearer moves nothing."""
    cheap = judge(pairs(0.5, 0.9, 0.7, 0.8))
    dear = judge([attrs.evolve(p, baseline=p.baseline * 100, candidate=p.candidate * 100) if p.task == "t0" else p
                  for p in pairs(0.5, 0.9, 0.7, 0.8)])
    assert cheap.interval == dear.interval and cheap.saving == pytest.approx(dear.saving)


def test_the_same_measures_and_bar_give_the_same_judgement_and_the_pass_share_verdict_is_untouched() -> None:
    """977 US48: 'the same results always give the same Verdict'; issue 38: keep existing Verdicts bit
    for bit. The efficiency draws come from a stream of their own: the pass-share Verdict under a Bar
    that names efficiency is the one without it."""
    given = pairs(0.6, 0.8, 0.9, 0.7, 1.05)
    assert judge(given) == judge(given)
    assert judge_efficiency(given, measure="cost", margin=0.2, bar=attrs.evolve(BAR, seed=8)) != judge(given)
    tasks = [TaskPair(f"t{i}", 1, 1 + (i % 3 == 0)) for i in range(20)]
    plain = compute_verdict(tasks, trials_per_task=3, bar=Bar(seed=7))
    assert compute_verdict(tasks, trials_per_task=3, bar=BAR) == plain
    with pytest.raises(ValueError, match="measure must be one of time, tokens, cost"):
        judge_efficiency(given, measure="speed", margin=0.2, bar=BAR)

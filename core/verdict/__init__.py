"""The Verdict: pure statistics from per-task pass counts to pass / fail / inconclusive.

Depends on nothing else in assay (numpy and attrs only), so it can be checked alone with fixed
seeds and read without knowing how Trials run. :mod:`assay.verdict.dirichlet` holds the one-look
method, :mod:`assay.verdict.confidence_sequence` the interval valid at every look, and
:mod:`assay.verdict.looks` the rule that picks between them as an Experiment is extended,
:mod:`assay.verdict.shift` whether a look's added tasks are like the first look's, and
:mod:`assay.verdict.efficiency` the judgement of a saving the Bar says a change is meant to make.
"""

from assay.verdict import runtime

runtime.prepare()

from assay.verdict.dirichlet import (  # noqa: E402  # after numpy's load above
    CLEAR_CHANCE,
    MORE_TASKS_CAP,
    SIMULATIONS,
    ArmSummary,
    Bar,
    TaskPair,
    Verdict,
    chance_of_clear_verdict,
    compute_verdict,
    compute_wrong_findings_verdict,
    credible_interval,
)
from assay.verdict import shift
from assay.verdict.efficiency import EfficiencyPair, EfficiencyVerdict, judge_efficiency
from assay.verdict.looks import chance_of_clear_first_look, verdict_at_look

__all__ = [
    "CLEAR_CHANCE", "MORE_TASKS_CAP", "SIMULATIONS", "ArmSummary", "Bar", "TaskPair", "Verdict",
    "chance_of_clear_verdict", "compute_verdict", "compute_wrong_findings_verdict", "credible_interval",
    "chance_of_clear_first_look", "verdict_at_look", "shift", "EfficiencyPair", "EfficiencyVerdict",
    "judge_efficiency",
]

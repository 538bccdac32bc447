"""The Verdict: pure statistics from per-task pass counts to pass / fail / inconclusive.

Depends on nothing else in assay (numpy and attrs only), so it can be checked alone with fixed
seeds and read without knowing how Trials run. :mod:`assay.verdict.dirichlet` holds the method.
"""

from assay.verdict.dirichlet import (
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

__all__ = [
    "CLEAR_CHANCE", "MORE_TASKS_CAP", "SIMULATIONS", "ArmSummary", "Bar", "TaskPair", "Verdict",
    "chance_of_clear_verdict", "compute_verdict", "compute_wrong_findings_verdict", "credible_interval",
]

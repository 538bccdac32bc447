"""Efficiency in the Verdict, when the Bar says the change is meant to save it (977 US11, D59).

Each Trial's measure is read from its record: its minutes, its tokens (input, output and cache,
as its Harness's stream gave them) or its cost; a task's, per Arm, is the mean over its Trials that
have one. :func:`assay.verdict.efficiency.judge_efficiency` judges the saving, paired per task.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import attrs
from assay.engine.folder import ExperimentDir, Slot
from assay.storage.records import ARMS, Bar, Outcome, Setup, TrialRecord

# The token counts a session's total is made of: Claude keeps its cache apart from its input,
# Codex counts cached tokens inside its input (its ``cached_input_tokens`` is not added again).
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def measure_of(record: TrialRecord, measure: str) -> float | None:
    """One Trial's minutes, tokens or USD; None where its Harness reported none."""
    if measure == "time":
        return record.minutes
    if measure == "tokens":
        total = sum(record.tokens.get(name, 0) for name in TOKEN_FIELDS)
        return float(total) if total else None
    return record.cost_usd


def judged(exp: ExperimentDir, setup: Setup, bar: Bar, dropped: Collection[str]) -> dict[str, Any] | None:
    """The efficiency judgement as ``verdict.json`` keeps it, or None when the Bar names none."""
    if bar.efficiency is None:
        return None
    from assay.verdict.efficiency import EfficiencyPair, judge_efficiency  # numpy: only for a Verdict

    pairs = []
    for task in setup.tasks:
        means: dict[str, float | None] = {}
        for arm in ARMS:
            values = []
            for index in range(task.trials):
                last = exp.slot_state(Slot(task.id, arm, index), bar).last
                value = measure_of(last, bar.efficiency) if last and last.outcome is not Outcome.VOID else None
                if value is not None:
                    values.append(value)
            means[arm] = sum(values) / len(values) if values else None
        pairs.append(EfficiencyPair(task.id, means["baseline"], means["candidate"], void=task.id in dropped))
    return attrs.asdict(judge_efficiency(pairs, measure=bar.efficiency, margin=bar.efficiency_margin, bar=bar))

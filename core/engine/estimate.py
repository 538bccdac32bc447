"""What an Experiment is expected to spend, shown before its first Trial (spec 1944 P2).

Each Arm's sessions are its Trials, times the re-runs its earlier Experiments needed, and its cost,
minutes and tokens the mean of those sessions': the history is keyed by what names the Arm's sessions (its
Harness and Model, or its Custom runner and digest), never by its Factory commit. Each panel
seat's sessions are two per pair still missing a call, priced by the frozen price table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from assay.engine.folder import ExperimentDir
from assay.pairs.panel import ORDERS, call_file
from assay.pairs.spend import price
from assay.storage import formats
from assay.storage.home import AssayHome
from assay.storage.records import ARMS, ArmSetup, Setup, TrialRecord
from assay.storage.userconfig import grading_config


def _key(arm: ArmSetup) -> tuple:
    return ("runner", arm.runner, arm.runner_digest) if arm.runner else ("harness", arm.harness, arm.model)


@attrs.define
class _Seen:
    """One Arm key's earlier Trials and sessions, with what each session reported."""

    trials: int = 0
    sessions: int = 0
    costs: list[float] = attrs.Factory(list)
    minutes: list[float] = attrs.Factory(list)
    tokens: list[int] = attrs.Factory(list)


def _mean(values: list) -> float | None:
    return sum(values) / len(values) if values else None


def _history(home: AssayHome, skip: str) -> dict[tuple, _Seen]:
    """Per Arm key: Trials, sessions and the sessions' reported costs, minutes and tokens in earlier Experiments."""
    out: dict[tuple, _Seen] = {}
    for folder in sorted(home.experiments.iterdir()) if home.experiments.is_dir() else []:
        if folder.name == skip or not (folder / "setup.json").exists():
            continue
        try:
            setup = formats.read(folder / "setup.json", Setup)
        except (formats.FormatError, OSError):
            continue
        for arm in ARMS:
            seen = out.setdefault(_key(setup.arm(arm)), _Seen())
            for slot in (folder / "trials").glob(f"*/{arm}-*"):
                records = [_read(p) for p in slot.glob("attempt-*/trial.json")]
                records = [r for r in records if r is not None]
                seen.trials, seen.sessions = seen.trials + bool(records), seen.sessions + len(records)
                seen.costs += [r.cost_usd for r in records if r.cost_usd is not None]
                seen.minutes += [r.minutes for r in records]
                seen.tokens += [sum(r.tokens.values()) for r in records if r.tokens]
    return out


def _read(path: Path) -> TrialRecord | None:
    try:
        return formats.read(path, TrialRecord)
    except (formats.FormatError, OSError):
        return None


def estimate(home: AssayHome, plan: Any) -> dict[str, Any]:
    """Each Arm's and each panel seat's expected sessions and cost (None where nothing prices it)."""
    history = _history(home, plan.id)
    planned = sum(t.trials for t in plan.setup.tasks)
    arms = {}
    for arm in ARMS:
        seen = history.get(_key(plan.setup.arm(arm)), _Seen())
        expected = round(planned * seen.sessions / seen.trials, 1) if seen.trials else float(planned)
        cost, minutes, tokens = (_mean(seen.costs), _mean(seen.minutes), _mean(seen.tokens))
        arms[arm] = {"trials": planned, "sessions": expected,
                     "cost_usd": None if cost is None else round(expected * cost, 4),
                     "minutes": None if minutes is None else round(expected * minutes, 1),
                     "tokens": None if tokens is None else round(expected * tokens),
                     "history_trials": seen.trials}
    exp = ExperimentDir(home.experiments / plan.id)
    pairs = [(t.id, i) for t in plan.setup.tasks if plan.tasks[t.id].process_grading for i in range(t.trials)]
    families = grading_config(home.root).families
    seats, total = {}, 0.0
    for seat in plan.bar.panel_seats:
        missing = sum(1 for task, i in pairs for order in ORDERS if not _saved(exp, task, i, seat, order))
        each = price(seat, families)
        cost = None if each is None else round(missing * each, 4)
        total += cost or 0.0
        seats[seat.key] = {"sessions": missing, "price_usd": each, "cost_usd": cost}
    return {"arms": arms, "panel": seats, "panel_cost_usd": round(total, 4),
            "panel_unpriced": sorted(k for k, v in seats.items() if v["cost_usd"] is None),
            "panel_spending_limit": plan.bar.panel_spending_limit}


def _saved(exp: ExperimentDir, task: str, index: int, seat: Any, order: int) -> bool:
    evidence = exp.pair(task, index)
    return evidence is not None and call_file(exp.panel_folder(evidence.pair), seat, order).exists()

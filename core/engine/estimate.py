"""What an Experiment with a Grader panel is expected to spend, shown before its first Trial.

Each Arm's sessions are its Trials, times the re-runs its earlier Experiments needed, and its cost
the mean cost of those sessions: the history is keyed by what names the Arm's sessions (its
Harness and Model, or its Custom runner and digest), never by its Factory commit. Each panel
seat's sessions are two per pair still missing a call, priced by the frozen price table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.engine.folder import ExperimentDir
from assay.pairs.panel import ORDERS, call_file
from assay.pairs.spend import price
from assay.storage import formats
from assay.storage.home import AssayHome
from assay.storage.records import ARMS, ArmSetup, Setup, TrialRecord
from assay.storage.userconfig import grading_config


def _key(arm: ArmSetup) -> tuple:
    return ("runner", arm.runner, arm.runner_digest) if arm.runner else ("harness", arm.harness, arm.model)


def _history(home: AssayHome, skip: str) -> dict[tuple, tuple[int, int, list[float]]]:
    """Per Arm key: Trials, sessions and the sessions' reported costs in earlier Experiments."""
    out: dict[tuple, tuple[int, int, list[float]]] = {}
    for folder in sorted(home.experiments.iterdir()) if home.experiments.is_dir() else []:
        if folder.name == skip or not (folder / "setup.json").exists():
            continue
        try:
            setup = formats.read(folder / "setup.json", Setup)
        except (formats.FormatError, OSError):
            continue
        for arm in ARMS:
            trials, sessions, costs = out.get(_key(setup.arm(arm)), (0, 0, []))
            for slot in (folder / "trials").glob(f"*/{arm}-*"):
                records = [_read(p) for p in slot.glob("attempt-*/trial.json")]
                records = [r for r in records if r is not None]
                trials, sessions = trials + bool(records), sessions + len(records)
                costs += [r.cost_usd for r in records if r.cost_usd is not None]
            out[_key(setup.arm(arm))] = (trials, sessions, costs)
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
        trials, sessions, costs = history.get(_key(plan.setup.arm(arm)), (0, 0, []))
        expected = round(planned * sessions / trials, 1) if trials else float(planned)
        mean = sum(costs) / len(costs) if costs else None
        arms[arm] = {"sessions": expected, "cost_usd": None if mean is None else round(expected * mean, 4),
                     "history_trials": trials}
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

"""What an Experiment's page draws from its data: the interval on an axis in points, each Eval task's
row (both Arms' pass counts as "2/3", the difference, links to its Trials), the Bar as settings with
their flags, and times for people."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from assay.storage.records import ARMS

TICKS = (1, 2, 5, 10, 20, 25, 50)  # steps, in points, an axis may take


def points(share: float) -> str:
    """A share (−1..1) as signed points: ``+12.5``, ``−3``, ``0``."""
    value = round(share * 100, 1)
    text = f"{abs(value):.1f}".rstrip("0").rstrip(".")
    return "0" if value == 0 else ("+" if value > 0 else "−") + text


def chart(verdict: Mapping[str, Any] | None, margin: float) -> dict[str, Any] | None:
    """The interval, zero and −margin on an axis in points, scaled to hold all three with room: each
    as a position (0..100 across), and the axis's ticks."""
    if not verdict or not verdict.get("interval"):
        return None
    lo, hi = verdict["interval"]
    start, end = min(lo, -margin, 0.0) * 100, max(hi, 0.0) * 100
    pad = max(2.0, (end - start) * 0.1)
    start, end = max(-100.0, start - pad), min(100.0, end + pad)
    step = next((s for s in TICKS if (end - start) / s <= 8), 50)
    start, end = math.floor(start / step) * step, math.ceil(end / step) * step

    def x(share: float) -> float:
        return round((share * 100 - start) / (end - start) * 100, 2)
    ticks = [{"x": x(t / 100), "label": points(t / 100)} for t in range(int(start), int(end) + 1, step)]
    return {"lo": x(lo), "hi": x(hi), "zero": x(0.0), "margin": x(-margin), "ticks": ticks,
            "verdict": verdict["verdict"], "lo_pts": points(lo), "hi_pts": points(hi), "margin_pts": points(-margin)}


SORTS = {"task": lambda r: r["task"], "baseline": lambda r: r["baseline_share"],
         "candidate": lambda r: r["candidate_share"], "difference": lambda r: r["difference"]}


def task_rows(experiment: str, tasks: Sequence[Mapping[str, Any]], trials: Sequence[Mapping[str, Any]],
              sort: str = "task") -> list[dict[str, Any]]:
    """Each Eval task's row: "passed/Trials" per Arm, the difference in points, what it waits on,
    and a link to each of its Trials; sorted by ``sort`` (a column; ``-`` first: descending)."""
    rows = []
    for t in tasks:
        task = t["task"].split("#", 1)[0]
        counted = t["baseline"] is not None and t["candidate"] is not None
        links = {arm: [_link(experiment, r) for r in _latest(trials, task, arm)] for arm in ARMS}
        rows.append({
            "task": t["task"], "trials": t["trials"],
            "baseline": f"{t['baseline']}/{t['trials']}" if counted else None,
            "candidate": f"{t['candidate']}/{t['trials']}" if counted else None,
            "baseline_share": t["baseline"] / t["trials"] if counted else None,
            "candidate_share": t["candidate"] / t["trials"] if counted else None,
            "difference": (t["candidate"] - t["baseline"]) / t["trials"] if counted else None,
            "shown_difference": points((t["candidate"] - t["baseline"]) / t["trials"]) if counted else None,
            "state": "dropped" if t["dropped"] else None if counted else f"waiting on {t['waits_on'] or 'its Trials'}",
            "links": links,
        })
    key, reverse = sort.lstrip("-"), sort.startswith("-")
    by = SORTS.get(key, SORTS["task"])
    known = [r for r in rows if by(r) is not None]
    return sorted(known, key=by, reverse=reverse) + [r for r in rows if by(r) is None]


def _latest(trials: Sequence[Mapping[str, Any]], task: str, arm: str) -> list[Mapping[str, Any]]:
    """The latest attempt of each of the task's Trials of ``arm``, by index."""
    latest: dict[int, Mapping[str, Any]] = {}
    for r in trials:
        if r["task"] == task and r["arm"] == arm and r["attempt"] >= latest.get(r["index"], r)["attempt"]:
            latest[r["index"]] = r
    return [latest[i] for i in sorted(latest)]


def _link(experiment: str, trial: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": f"{trial['arm']}-{trial['index']}", "attempt": trial["attempt"],
            "passed": trial["score"]["passed"] if trial.get("score") else None, "outcome": trial["outcome"],
            "url": f"/experiments/{quote(experiment)}/trials/{trial['task']}/{trial['arm']}-{trial['index']}/{trial['attempt']}"}


def duration(seconds: float | None) -> str | None:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    if seconds is None:
        return None
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _seconds(value: float) -> str:
    return duration(value) or ""


def _kinds(value: Mapping[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(value.items()))


def _share(value: float) -> str:
    return f"{value * 100:g} %"


# Each Bar field: what it is called, the flag that sets it (None: fixed by assay), and how it reads.
BAR = (
    ("margin", "Margin: how much worse the Candidate may be and still pass", "--margin",
     lambda v: f"{points(v).lstrip('+')} points"),
    ("level", "Credible level of the interval", "--level", _share),
    ("prior_weight", "Prior", "--prior-weight", lambda v: f"{v:g} pseudo Eval task{'s' if v != 1 else ''}, spread evenly"),
    ("seed", "Seed of the Verdict's draws", "--seed", str),
    ("draws", "Posterior draws", "--draws", lambda v: f"{v:,}"),
    ("trials_per_task", "Trials per Arm per Eval task, by suite kind", "--trials-per-task", _kinds),
    ("timeout_seconds", "Timeout per Trial (a timeout is a fail)", "--timeout", _seconds),
    ("void_reruns", "Re-runs of a Void Trial", None, str),
    ("void_provider_errors", "Provider errors before any work that stop a session", None, str),
    ("void_backoff_seconds", "Wait before re-running a Trial the provider failed (doubling)", "--void-backoff", _seconds),
    ("max_dropped_share", "Most Eval tasks that may drop out before the Verdict is inconclusive", None, _share),
    ("usage_warning", "Share of a plan window used at which the Experiment pauses", "--usage-warning", _share),
    ("efficiency", "What the change is meant to save (judged beside the pass share)", "--efficiency", str),
    ("efficiency_margin", "Share of it the change is meant to save", "--efficiency-margin", _share),
    ("model_graders", "Model Grader seats", "--model-grader", lambda v: ", ".join(v) or "none"),
    ("model_grader_shared_family", "The Arms' family the model Grader shares (no third family)", None, str),
    ("scripted_graders", "Grader sessions played by a script (SHA-256)", None, lambda v: v[:12]),
    ("look_rule", "How looks are judged", "--look-rule", str),
    ("panel", "Grader panel on pairs of process Trials", "--panel", str),
    ("panel_seats", "Grader panel seats", "--panel-seat",
     lambda v: ", ".join("-".join(x for x in (s["harness"], s["model"], s.get("effort")) if x) for s in v) or "none"),
    ("panel_vote", "Panel ballots", "--panel-vote", lambda v: f"one per {v}"),
    ("panel_arm_family_rule", "Seats of an Arm's family sit out while another family votes", "--panel-arm-family-rule",
     lambda v: "on" if v else "off"),
    ("panel_families", "Fewest model families voting on each pair", "--panel-families", str),
    ("panel_spending_limit", "Grader panel's spending limit per run", "--panel-spending-limit", lambda v: f"${v:.2f}"),
    ("panel_agreement", "Least people-panel agreement", "--panel-agreement", _share),
    ("people", "People's blind reviews of pairs", "--people", str),
    ("people_readers", "Readers", "--people-reader", lambda v: ", ".join(v) or "none"),
    ("people_sample", "Share of pairs given to readers", "--people-sample", _share),
    ("people_overlap", "Readers per sampled pair", "--people-overlap", lambda v: str(v) if v else "every reader"),
)
PANEL = {"panel_seats", "panel_vote", "panel_arm_family_rule", "panel_families", "panel_spending_limit", "panel_agreement"}
PEOPLE = {"people_readers", "people_sample", "people_overlap"}


def bar_settings(bar: Mapping[str, Any]) -> list[dict[str, str | None]]:
    """The Bar as a list of settings (what it is, its value for people, the flag that set it); the
    panel's and people's details only where they are on, and nothing unset."""
    out = []
    for field, label, flag, shown in BAR:
        value = bar.get(field)
        if value is None or field in PANEL and bar.get("panel") == "off" or field in PEOPLE and bar.get("people") == "off" \
                or field == "efficiency_margin" and not bar.get("efficiency"):
            continue
        out.append({"field": field, "label": label, "value": shown(value), "flag": flag})
    return out

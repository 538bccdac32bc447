"""Your Scores of sampled pull requests, what you may see of the model's meanwhile, and the listing.

While a pull request is marked for you (or you have begun scoring it) and your five Scores are not
all in, the model's stay hidden, so they can't sway you; once they are, both show side by side and
count toward calibration.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay.scoring.calibration import calibrate
from assay.scoring.store import CRITERIA, Criterion, MyScores, PullScores, SampledPull, ScoringRun, ScoringStore
from assay.storage import formats
from assay.storage.commands import now

_LONG_AGO = dt.datetime.min.replace(tzinfo=dt.timezone.utc)  # where Scores whose run record is gone sort
HIDDEN = "hidden until all five of your Scores are in (assay scores PULL --mine)"
Asker = Callable[[str], tuple[str, str]]


def _known(store: ScoringStore, key: str) -> bool:
    return store.scores(key) is not None or key in store.marked_for_you()


def enter(store: ScoringStore, key: str, given: Mapping[str, str | None], why: Sequence[str],
          ask: Asker | None = None) -> MyScores:
    """Add your Scores for ``key`` (``given``: criterion -> "pass"/"fail"; ``why``: "CRITERION=REASON"),
    asking for the missing ones through ``ask`` when given. Raises ValueError naming the bad flag."""
    if not _known(store, key):
        raise ValueError(f"{key}: not in any Scoring run's sample (see `assay scores`)")
    reasons: dict[str, str] = {}
    for item in why:
        name, sep, text = item.partition("=")
        match = next((c for c in CRITERIA if c.lower() == name.strip().lower()), None)
        if not sep or match is None or not text.strip():
            raise ValueError(f"--why '{item}': expected CRITERION=REASON with CRITERION one of {', '.join(CRITERIA)}")
        reasons[match] = text.strip()
    existing = store.mine(key)
    criteria = dict(existing.criteria) if existing else {}
    for name, verdict in given.items():
        if verdict is None:
            continue
        if verdict not in ("pass", "fail"):
            raise ValueError(f"--{name.lower()} '{verdict}': expected pass or fail")
        if name not in reasons:
            raise ValueError(f"--{name.lower()} {verdict}: say why with --why {name}=REASON")
        criteria[name] = Criterion(verdict == "pass", reasons[name])
    if ask is not None:
        for name in CRITERIA:
            if name not in criteria:
                verdict, text = ask(name)
                if verdict.strip() not in ("pass", "fail") or not text.strip():
                    raise ValueError(f"{name}: expected pass or fail, and a reason")
                criteria[name] = Criterion(verdict.strip() == "pass", text.strip())
    stamp = now()
    complete = existing.complete_at if existing and existing.complete_at else (
        stamp if all(c in criteria for c in CRITERIA) else None)
    mine = MyScores(key, {c: criteria[c] for c in CRITERIA if c in criteria}, stamp, complete)
    store.save_mine(mine)
    return mine


def _hidden(store: ScoringStore, key: str, mine: MyScores | None) -> bool:
    waiting = mine is not None or key in store.marked_for_you()
    return waiting and not (mine and mine.complete_at)


def one(store: ScoringStore, key: str) -> dict[str, Any] | None:
    """One pull request as people and the Console see it: the model's Scores (or why they're hidden) and yours."""
    model, mine = store.scores(key), store.mine(key)
    if model is None and not _known(store, key):
        return None
    hidden = _hidden(store, key, mine)
    pull = model.pull if model else next(p for r in store.runs() for p in r.sample if p.key == key)
    return {"key": key, "built_with": f"{pull.harness} {pull.version or ''} · {pull.model} · {pull.effort}".replace("  ", " "),
            "pull": formats.unstructure(pull),
            "grader": f"{model.grader_harness}:{model.grader_model}" if model and not hidden else None,
            "model": None if hidden or model is None else formats.unstructure(model)["criteria"],
            "hidden": HIDDEN if hidden else None, "criteria_order": list(CRITERIA),
            "mine": formats.unstructure(mine)["criteria"] if mine else None,
            "mine_complete": bool(mine and mine.complete_at)}


def listing(store: ScoringStore) -> dict[str, Any]:
    """The sample by week (each Scoring run's, newest first, one that drew nothing too), each
    criterion's calibration, and the pull requests waiting for your Scores. A pull request is listed once: under the run that scored
    it, else under the last run that drew it (not scored yet, or dropped and why)."""
    model = {s.pull.key: s for s in store.all_scores()}
    runs = store.runs()
    dropped = store.dropped()
    home_run = {p.key: (p, run.id) for run in runs for p in run.sample}  # the last run that drew each
    home_run.update({key: (s.pull, s.run) for key, s in model.items()})
    weeks: dict[str, list[dict[str, Any]]] = {run.id: [] for run in runs}  # a week that drew nothing shows too
    for key, (pull, run) in sorted(home_run.items(), key=lambda item: (item[1][0].merged_at, item[0])):
        weeks.setdefault(run, []).append(_row(store, pull, model.get(key), dropped.get(key)))
    windows = {r.id: r for r in runs}
    order = sorted(weeks, key=lambda id: windows[id].started_at if id in windows else _LONG_AGO, reverse=True)
    yours = [m for m in (store.mine(key) for key in model) if m]
    waiting = [k for k in store.marked_for_you() if not ((m := store.mine(k)) and m.complete_at)]
    visible = [model[p["key"]] for rows in weeks.values() for p in rows if p["model"] is not None]
    return {"by_harness_version": by_harness_version(visible),
            "calibration": [{"criterion": c.criterion, "calibrated": c.calibrated, "matched": c.matched,
                             "compared": c.compared, "describe": c.describe()}
                            for c in calibrate(list(model.values()), yours)],
            "weeks": [_week(windows.get(id), id, weeks[id]) for id in order], "waiting_for_you": waiting}


def _week(run: ScoringRun | None, id: str, pulls: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's week: its window (from the end of the last one to its start) and its pull requests."""
    if run is None:  # its run record is gone: its Scores still list
        return {"run": id, "week": None, "window": None, "pulls": pulls}
    year, week, _ = run.window_end.isocalendar()
    return {"run": id, "week": f"{year}-W{week:02d}", "window": [run.window_start.isoformat(), run.window_end.isoformat()],
            "pulls": pulls}


def _row(store: ScoringStore, pull: SampledPull, scores: PullScores | None, dropped: str | None) -> dict[str, Any]:
    mine = store.mine(pull.key)
    hidden = _hidden(store, pull.key, mine)
    shown = scores is not None and not hidden
    state = "scored" if scores else (f"dropped: {dropped}" if dropped else "not scored yet")
    return {"key": pull.key, "merged_at": pull.merged_at.isoformat(), "built_with": f"{pull.harness}/{pull.model}",
            "state": state, "grader": f"{scores.grader_harness}:{scores.grader_model}" if shown else None,
            "model": formats.unstructure(scores)["criteria"] if shown else None,
            "mine": formats.unstructure(mine)["criteria"] if mine else None}


def by_harness_version(scores: Sequence[PullScores]) -> dict[str, dict[str, str]]:
    """Each criterion's passes per Harness and version ("claude 2.1.197": {"Correct": "3/4", ...}),
    so a drop after a Harness updates itself shows."""
    groups: dict[str, list[PullScores]] = {}
    for s in scores:
        groups.setdefault(f"{s.pull.harness} {s.pull.version or '(no version)'}", []).append(s)
    return {name: {c: f"{sum(s.criteria[c].passed for s in group)}/{len(group)}" for c in CRITERIA}
            for name, group in sorted(groups.items())}

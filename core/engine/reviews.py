"""People's blind reviews of pairs, as the CLI (``assay review``) and the Console both take them.

A reader sees a pair blind (sides A and B drawn for them), seals a merge call per side, then gives
a preference (and an optional rubric); only then are the Arms, the Grader panel's calls and the
other readers' reviews shown. Every record is a new file, attributed to its reader, and the Verdict
is published again after it. Bad input is a ValueError whose message says what to do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from assay.engine import blinding, results
from assay.engine.folder import ExperimentDir
from assay.hooks.loaded import Plugins
from assay.pairs import people
from assay.pairs.evidence import PairEvidence
from assay.pairs.page import blind_page
from assay.storage.commands import now
from assay.storage.files import exclusive_lock
from assay.storage.home import AssayHome
from assay.storage.records import ARMS, Arm, EvalTask
from assay.storage.userconfig import grading_config


def reader_of(exp: ExperimentDir, reader: str | None) -> str:
    """The reader (default ``$USER``), checked to be one the Bar names."""
    bar = exp.bar()
    name = reader or os.environ.get("USER", "")
    if bar.people == "off":
        raise ValueError(f"Experiment {exp.id} has no people's reviews (it started without --people-reader)")
    if name not in bar.people_readers:
        raise ValueError(f"'{name}' is not a reader of Experiment {exp.id} (readers: {', '.join(bar.people_readers)}); "
                         f"pass --reader NAME")
    return name


def pairs_of(exp: ExperimentDir) -> dict[str, tuple[str, PairEvidence]]:
    """Every pair with evidence: its task's id and the evidence."""
    setup = exp.setup()
    return {e.pair: (t.id, e) for t in setup.tasks for i in range(t.trials) if (e := exp.pair(t.id, i))}


def pair_of(home: AssayHome, plugins: Plugins, exp: ExperimentDir, pair: str) -> tuple[EvalTask, PairEvidence]:
    """The pair's Eval task (as its suite says now) and its evidence."""
    from assay.evaltasks import manifests

    found = pairs_of(exp)
    if pair not in found:
        raise ValueError(f"Experiment {exp.id} has no pair '{pair}' with evidence (pairs: {', '.join(sorted(found)) or 'none'})")
    task_id, evidence = found[pair]
    try:
        return manifests.find_task(home, task_id, plugins.suite_kinds()), evidence
    except manifests.ManifestError as e:
        raise ValueError(str(e)) from None


def page(home: AssayHome, plugins: Plugins, exp: ExperimentDir, pair: str, reader: str) -> dict[str, Any]:
    """The blind page for ``reader``, with their state: what they may do next."""
    bar, setup = exp.bar(), exp.setup()
    task, evidence = pair_of(home, plugins, exp, pair)
    outcomes = {arm: blinding.outcome(exp, bar, evidence.task, arm, evidence.index) for arm in ARMS}
    shown = blind_page(task, evidence, outcomes, people.reader_sides(bar.seed, reader, pair),
                       blinding.words(exp, setup, bar))
    state = people.reader_state(people.read_reviews(exp.reviews_folder(pair)), reader)
    step = "revealed" if state.revealed else "prefer" if state.merge else "merge"
    return {**shown, "reader": reader, "step": step,
            "next": f"assay review {exp.id} {pair} " + ("--prefer A|B|none" if step == "prefer" else "--merge A=yes|no,B=yes|no")}


def record(home: AssayHome, plugins: Plugins, exp: ExperimentDir, pair: str, reader: str, *,
           merge: Mapping[str, bool] | None = None, prefer: str | None = None,
           rubric: Mapping[str, int] | None = None) -> tuple[people.Review, Any]:
    """Append the reader's merge calls (by side, A and B) or their preference (A, B or none), then
    publish the Verdict again; the Review and the Verdict (None before the first). Raises ValueError,
    and :class:`~assay.storage.files.Locked` while the Experiment runs."""
    if (merge is None) == (prefer is None):
        raise ValueError("give either the merge calls (first) or a preference (then)")
    if prefer is not None and prefer not in ("A", "B", "none"):
        raise ValueError(f"the preference must be A, B or none, got {prefer!r}")
    if merge is not None and set(merge) != {"A", "B"}:
        raise ValueError("call both sides, A and B")
    pair_of(home, plugins, exp, pair)
    sides = people.reader_sides(exp.bar().seed, reader, pair)
    folder = exp.reviews_folder(pair)
    with exclusive_lock(exp.lock_file):  # never beside a run of the same Experiment
        state = people.reader_state(people.read_reviews(folder), reader)
        if merge is not None:
            if state.merge is not None and not state.revealed:
                raise ValueError(f"your merge calls on {pair} are sealed; next: your preference")
            review = people.Review(pair, reader, 0, now(), "merge", merge={sides[0]: merge["A"], sides[1]: merge["B"]},
                                   blind=not state.revealed)
        else:
            if state.merge is None:
                raise ValueError(f"seal your merge calls first: they come before a preference on {pair}")
            chosen = None if prefer == "none" else sides[0] if prefer == "A" else sides[1]
            review = people.Review(pair, reader, 0, now(), "preference", preference=chosen, rubric=dict(rubric or {}),
                                   blind=not state.revealed)
        review = people.append(folder, review)
        result = results.publish(home, exp, results.wrong_finding_kinds(plugins),
                                 grading_config(home.root).families) if exp.verdict_file.exists() else None
    return review, result


def reveal(exp: ExperimentDir, pair: str, reader: str) -> dict[str, Any]:
    """What a reader sees once their preference is in: the Arms, the panel's calls, the others' reviews."""
    setup = exp.setup()
    sides: tuple[Arm, Arm] = people.reader_sides(exp.bar().seed, reader, pair)
    verdict = results.read_verdict(exp) or {}
    panel = next((p for p in verdict.get("panel", []) if p["pair"] == pair), None)
    others = [{"reader": r.reader, "kind": r.kind, "merge": dict(r.merge), "preference": r.preference,
               "blind": r.blind} for r in people.read_reviews(exp.reviews_folder(pair)) if r.reader != reader]
    return {"A": {"arm": sides[0], "label": setup.arm(sides[0]).label()},
            "B": {"arm": sides[1], "label": setup.arm(sides[1]).label()},
            "panel": panel and {"seats": panel["seats"], "call": panel["call"]}, "other_readers": others}

"""``assay review`` and ``assay experiments ID --pair PAIR``: people's blind reviews of pairs.

A reader sees a pair blind (sides A and B drawn for them), seals a merge call per side, then gives
a preference (and an optional rubric); only then are the Arms, the Grader panel's calls and the
other readers' reviews shown. Every record is a new file, attributed to its reader.
"""

from __future__ import annotations

import os
from typing import Any

import typer
from assay.cli.experiment_records import find_experiment, publish_verdict, verdict_line
from assay.cli.output import JsonOpt, emit_json, fail
from assay.engine import blinding
from assay.engine.folder import ExperimentDir
from assay.engine.results import read_verdict
from assay.hooks import plugin_manager as plugin_loading
from assay.pairs import people
from assay.pairs.evidence import PairEvidence
from assay.pairs.page import blind_page, page_text
from assay.storage.commands import now
from assay.storage.files import Locked, NotALockFile, exclusive_lock
from assay.storage.home import AssayHome
from assay.storage.records import ARMS, Arm, EvalTask


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    app.command("review")(_review_command(plugins))


def _reader(exp: ExperimentDir, reader: str | None) -> str:
    bar = exp.bar()
    name = reader or os.environ.get("USER", "")
    if bar.people == "off":
        fail(f"Experiment {exp.id} has no people's reviews (it started without --people-reader)")
    if name not in bar.people_readers:
        fail(f"'{name}' is not a reader of Experiment {exp.id} (readers: {', '.join(bar.people_readers)}); "
             f"pass --reader NAME")
    return name


def _pair(exp: ExperimentDir, pair: str) -> tuple[EvalTask, PairEvidence]:
    """The pair's Eval task (as its suite says now) and its evidence, or a one-line refusal."""
    from assay.evaltasks import manifests

    setup = exp.setup()
    found = {e.pair: (t.id, e) for t in setup.tasks for i in range(t.trials) if (e := exp.pair(t.id, i))}
    if pair not in found:
        fail(f"Experiment {exp.id} has no pair '{pair}' with evidence (pairs: {', '.join(sorted(found)) or 'none'})")
    task_id, evidence = found[pair]
    try:
        return manifests.find_task(AssayHome.from_env(), task_id, plugin_loading.load().suite_kinds()), evidence
    except manifests.ManifestError as e:
        fail(str(e))


def _page(exp: ExperimentDir, pair: str, reader: str) -> dict[str, Any]:
    bar, setup = exp.bar(), exp.setup()
    task, evidence = _pair(exp, pair)
    outcomes = {arm: blinding.outcome(exp, bar, evidence.task, arm, evidence.index) for arm in ARMS}
    page = blind_page(task, evidence, outcomes, people.reader_sides(bar.seed, reader, pair),
                      blinding.words(exp, setup, bar))
    state = people.reader_state(people.read_reviews(exp.reviews_folder(pair)), reader)
    step = "--prefer A|B|none" if state.merge and not state.revealed else "--merge A=yes|no,B=yes|no"
    return {**page, "reader": reader, "next": f"assay review {exp.id} {pair} {step}"}


def show_pair(exp: ExperimentDir, pair: str, reader: str | None, json_: bool) -> None:
    """``assay experiments ID --pair PAIR``: the blind page."""
    page = _page(exp, pair, _reader(exp, reader))
    if json_:
        emit_json(page)
        return
    typer.echo(page_text(page))
    typer.echo(f"\nNext: {page['next']}")


def _merge_calls(text: str, sides: tuple[Arm, Arm]) -> dict[Arm, bool]:
    calls: dict[str, bool] = {}
    for part in text.split(","):
        side, _, value = part.strip().partition("=")
        if side not in ("A", "B") or value not in ("yes", "no") or side in calls:
            fail(f"--merge '{text}': expected A=yes|no,B=yes|no")
        calls[side] = value == "yes"
    if set(calls) != {"A", "B"}:
        fail(f"--merge '{text}': call both sides, A and B")
    return {sides[0]: calls["A"], sides[1]: calls["B"]}


def _rubric(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name.strip() or not value.isdigit() or not 1 <= int(value) <= 5:
            fail(f"--rubric '{item}': expected NAME=1..5")
        out[name.strip()] = int(value)
    return out


def _reveal(exp: ExperimentDir, pair: str, reader: str, sides: tuple[Arm, Arm]) -> dict[str, Any]:
    """What a reader sees once their preference is in: the Arms, the panel's calls, the others' reviews."""
    setup = exp.setup()
    verdict = read_verdict(exp) or {}
    panel = next((p for p in verdict.get("panel", []) if p["pair"] == pair), None)
    others = [{"reader": r.reader, "kind": r.kind, "merge": dict(r.merge), "preference": r.preference,
               "blind": r.blind} for r in people.read_reviews(exp.reviews_folder(pair)) if r.reader != reader]
    return {"A": {"arm": sides[0], "label": setup.arm(sides[0]).label()},
            "B": {"arm": sides[1], "label": setup.arm(sides[1]).label()},
            "panel": panel and {"seats": panel["seats"], "call": panel["call"]}, "other_readers": others}


def _review_command(plugins: plugin_loading.Plugins):
    def review(
        experiment: str = typer.Argument(..., help="The Experiment (an id or a unique prefix)."),
        pair: str = typer.Argument(..., help="The pair, as `assay experiments ID --json` lists it."),
        merge: str = typer.Option(None, "--merge", metavar="A=yes|no,B=yes|no", help="Seal your merge call on each side."),
        prefer: str = typer.Option(None, "--prefer", metavar="A|B|none", help="After your merge calls: the side you prefer."),
        rubric: list[str] = typer.Option([], "--rubric", metavar="NAME=1..5", help="With --prefer: a rubric score (repeatable)."),
        reader: str = typer.Option(None, "--reader", help="Who reviews (default: $USER)."),
        json_: bool = JsonOpt,
    ) -> None:
        """Review a pair blind: seal a merge call per side, then give a preference; the Arms are revealed after."""
        home = AssayHome.from_env()
        exp = find_experiment(home, experiment)
        name = _reader(exp, reader)
        if (merge is None) == (prefer is None):
            fail("give either --merge A=yes|no,B=yes|no (first) or --prefer A|B|none (then)")
        if prefer is not None and prefer not in ("A", "B", "none"):
            fail(f"--prefer must be A, B or none, got {prefer!r}")
        _pair(exp, pair)
        sides = people.reader_sides(exp.bar().seed, name, pair)
        folder = exp.reviews_folder(pair)
        try:
            with exclusive_lock(exp.lock_file):  # never beside a run of the same Experiment
                state = people.reader_state(people.read_reviews(folder), name)
                if merge is not None:
                    if state.merge is not None and not state.revealed:
                        fail(f"your merge calls on {pair} are sealed; next: assay review {exp.id} {pair} --prefer A|B|none")
                    record = people.Review(pair, name, 0, now(), "merge", merge=_merge_calls(merge, sides),
                                           blind=not state.revealed)
                else:
                    if state.merge is None:
                        fail(f"seal your merge calls first: assay review {exp.id} {pair} --merge A=yes|no,B=yes|no")
                    chosen = None if prefer == "none" else sides[0] if prefer == "A" else sides[1]
                    record = people.Review(pair, name, 0, now(), "preference", preference=chosen,
                                           rubric=_rubric(rubric), blind=not state.revealed)
                record = people.append(folder, record)
                result = publish_verdict(home, plugins, exp) if exp.verdict_file.exists() else None
        except Locked:
            fail(f"Experiment {exp.id} is running; review once it ends", code=1)
        except NotALockFile as e:
            fail(str(e))
        revealed = _reveal(exp, pair, name, sides) if record.kind == "preference" else None
        if json_:
            emit_json({"id": exp.id, "pair": pair, "reader": name, "review": record.n, "kind": record.kind,
                       "blind": record.blind, "revealed": revealed,
                       "verdict": result.verdict if result else None, "final": result.final if result else None})
            return
        if revealed is None:
            typer.echo(f"Sealed your merge calls on {pair} (review {record.n}"
                       f"{'' if record.blind else ', not blind: begun after your reveal'}).")
            typer.echo(f"Next: assay review {exp.id} {pair} --prefer A|B|none")
        else:
            typer.echo(f"Recorded your preference on {pair}. Revealed:")
            for side in ("A", "B"):
                typer.echo(f"  Change {side} was the {revealed[side]['arm'].title()}: {revealed[side]['label']}")
            if revealed["panel"] and revealed["panel"]["call"]:
                call = revealed["panel"]["call"]
                typer.echo(f"  The Grader panel: merge {call['merge']}, prefers {call['preference'] or 'neither'}")
            for other in revealed["other_readers"]:
                typer.echo(f"  {other['reader']}: {other['kind']} {other['merge'] or other['preference']}")
        if result is not None:
            typer.echo(verdict_line(read_verdict(exp) or {}))

    return review

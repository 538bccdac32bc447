"""``assay review`` and ``assay experiments ID --pair PAIR``: people's blind reviews of pairs
(the flow is :mod:`assay.engine.reviews`'s; this module parses the flags and prints)."""

from __future__ import annotations

from typing import Any

import typer
from assay.cli.experiment_records import find_experiment, show_verdict
from assay.cli.output import JsonOpt, emit_json, fail, say
from assay.engine.folder import ExperimentDir
from assay.engine.results import read_verdict
from assay.hooks import plugin_manager as plugin_loading
from assay.pairs.page import page_text
from assay.storage.files import Locked, NotALockFile
from assay.storage.home import AssayHome


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    app.command("review")(_review_command(plugins))


def show_pair(exp: ExperimentDir, pair: str, reader: str | None, json_: bool) -> None:
    """``assay experiments ID --pair PAIR``: the blind page."""
    from assay.engine import reviews

    try:
        page = reviews.page(AssayHome.from_env(), plugin_loading.load(), exp, pair, reviews.reader_of(exp, reader))
    except ValueError as e:
        fail(str(e))
    if json_:
        emit_json(page)
        return
    say(page_text(page))  # the Trials' diffs and test output, the task's ticket
    say(f"\nNext: {page['next']}")


def _merge_calls(text: str) -> dict[str, bool]:
    calls: dict[str, bool] = {}
    for part in text.split(","):
        side, _, value = part.strip().partition("=")
        if side not in ("A", "B") or value not in ("yes", "no") or side in calls:
            fail(f"--merge '{text}': expected A=yes|no,B=yes|no")
        calls[side] = value == "yes"
    if set(calls) != {"A", "B"}:
        fail(f"--merge '{text}': call both sides, A and B")
    return calls


def _rubric(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name.strip() or not value.isdigit() or not 1 <= int(value) <= 5:
            fail(f"--rubric '{item}': expected NAME=1..5")
        out[name.strip()] = int(value)
    return out


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
        from assay.engine import reviews

        home = AssayHome.from_env()
        exp = find_experiment(home, experiment)
        if (merge is None) == (prefer is None):
            fail("give either --merge A=yes|no,B=yes|no (first) or --prefer A|B|none (then)")
        try:
            name = reviews.reader_of(exp, reader)
            record, result = reviews.record(home, plugins, exp, pair, name,
                                            merge=_merge_calls(merge) if merge is not None else None, prefer=prefer,
                                            rubric=_rubric(rubric))
        except ValueError as e:
            fail(f"{e} (assay review {exp.id} {pair} --merge A=yes|no,B=yes|no, then --prefer A|B|none)")
        except Locked:
            fail(f"Experiment {exp.id} is running; review once it ends", code=1)
        except NotALockFile as e:
            fail(str(e))
        # Spec 1944 P12: nothing is revealed before the preference, not even the Verdict (the panel's
        # call on this very pair, by Arm, is part of it), so a merge call answers with the next step alone.
        revealed = reviews.reveal(exp, pair, name) if record.kind == "preference" else None
        shown = result if revealed is not None else None
        if json_:
            emit_json({"id": exp.id, "pair": pair, "reader": name, "review": record.n, "kind": record.kind,
                       "blind": record.blind, "revealed": revealed,
                       "verdict": shown.verdict if shown else None, "final": shown.final if shown else None})
            return
        _print_review(exp, pair, record, revealed)
        if shown is not None:
            show_verdict(read_verdict(exp) or {}, exp.id, one_look=exp.bar().look_rule == "one-look")

    return review


def _print_review(exp: ExperimentDir, pair: str, record: Any, revealed: dict[str, Any] | None) -> None:
    if revealed is None:
        say(f"Sealed your merge calls on {pair} (review {record.n}"
            f"{'' if record.blind else ', not blind: begun after your reveal'}).")
        say(f"Next: assay review {exp.id} {pair} --prefer A|B|none")
        return
    say(f"Recorded your preference on {pair}. Revealed:")
    for side in ("A", "B"):
        say(f"  Change {side} was the {revealed[side]['arm'].title()}: {revealed[side]['label']}")
    if revealed["panel"] and revealed["panel"]["call"]:
        call = revealed["panel"]["call"]
        say(f"  The Grader panel: merge {call['merge']}, prefers {call['preference'] or 'neither'}")
    for other in revealed["other_readers"]:
        say(f"  {other['reader']}: {other['kind']} {other['merge'] or other['preference']}")

"""Finding an Experiment from the command line and publishing its Verdict after a person's record
(shared by ``assay experiments``, ``assay recheck`` and ``assay review``)."""

from __future__ import annotations

from typing import Any

import attrs
from assay.cli.output import fail
from assay.hooks import plugin_manager as plugin_loading
from assay.storage import commands, formats
from assay.storage.home import AssayHome


def verdict_line(verdict: dict) -> str:
    """The Verdict in a few lines, with whatever still keeps it from being final."""
    text = f"Verdict: {verdict['verdict']}"
    if verdict.get("interval"):
        lo, hi = verdict["interval"]
        text += f", interval [{lo:+.3f}, {hi:+.3f}] (Candidate − Baseline pass share)"
    for group in verdict.get("groups", []):
        if group.get("reason"):
            text += f"\n  {group['reason']}"
        if group.get("more_tasks") is not None:
            more = f"More than {group['more_tasks']}" if group.get("more_tasks_over_cap") else f"About {group['more_tasks']}"
            text += f"\n  {more} more Eval tasks would settle it."
    for group in verdict.get("wrong_findings", []):
        text += f"\n  Wrong findings: {group['verdict']}, interval [{group['interval'][0]:+.3f}, {group['interval'][1]:+.3f}]"
    waiting = [item["trial"] for item in verdict.get("recheck", []) if not item["rechecked"]]
    if waiting:
        text += "\n  Not final: recheck " + ", ".join(waiting) + " (assay recheck ID TRIAL --pass|--fail --why …)"
    if verdict.get("pending"):
        text += "\n  Not final: Scores pending for " + ", ".join(verdict["pending"])
    for pair in verdict.get("panel", []):
        call = pair.get("call")
        said = "calls missing" if call is None else "merge " + ", ".join(
            f"{arm.title()} {'yes' if v else 'tie' if v is None else 'no'}" for arm, v in call["merge"].items()
        ) + f"; prefers {(call['preference'] or 'neither').title()}"
        text += f"\n  Grader panel on {pair['pair']} ({'counted' if pair.get('counted') else 'beside'}): {said}"
    if verdict.get("why"):
        text += f"\n  Inconclusive: {verdict['why']}"
    if verdict.get("waiting_on_people"):
        text += "\n  Waiting on people: " + ", ".join(verdict["waiting_on_people"]) + " (assay review ID PAIR)"
    if verdict.get("panel_missing"):
        text += "\n  Not final: Grader panel calls missing for " + ", ".join(verdict["panel_missing"])
    return text


def find_experiment(home: AssayHome, ref: str) -> Any:
    from assay.engine.folder import ExperimentDir

    matches = sorted(p for p in home.experiments.glob(f"{ref}*") if (p / "setup.json").exists()) if home.experiments.is_dir() else []
    if not matches:
        fail(f"no Experiment '{ref}' under {home.experiments}")
    if len(matches) > 1:
        fail(f"'{ref}' names several Experiments: {', '.join(p.name for p in matches)}")
    return ExperimentDir(matches[0])


def command_record(home: AssayHome, id: str) -> Any:
    path = commands.record_path(home, "experiment", id)
    return formats.read(path, commands.CommandRecord) if path.exists() else None


def publish_verdict(home: AssayHome, plugins: plugin_loading.Plugins, exp: Any) -> Any:
    """Recompute the Verdict after a person's record (a recheck, a review) and show it in the Inbox;
    the caller holds the Experiment's lock."""
    from assay.engine import results
    from assay.storage.userconfig import grading_config

    result = results.experiment_verdict(exp, exp.setup(), exp.bar(), results.wrong_finding_kinds(plugins),
                                        families=grading_config(home.root).families)
    formats.write(exp.verdict_file, result)
    command = command_record(home, exp.id)
    if command is not None and command.state == "done":
        formats.write(commands.record_path(home, "experiment", exp.id), attrs.evolve(
            command, outcome=result.verdict, summary=f"Verdict {result.verdict}",
            waiting=results.waiting_text(result)))
    return result

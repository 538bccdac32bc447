"""Finding an Experiment from the command line and publishing its Verdict after a person's record
(shared by ``assay experiments``, ``assay recheck`` and ``assay review``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.cli.output import fail, say

if TYPE_CHECKING:
    from assay.hooks import plugin_manager as plugin_loading
    from assay.storage.home import AssayHome


def shared_family_note(family: str) -> str:
    """What an Experiment graded by a Model of an Arm's own family says (spec 977 US40)."""
    return (f"Graded by a {family} model Grader, the family an Arm runs on: no seat from a third family "
            "was configured (seat one with --model-grader or grading.seats).")


def verdict_line(verdict: dict, exp_id: str, *, one_look: bool = False) -> str:
    """The Verdict in a few lines, with its look and whatever still keeps it from being final (it
    names tasks and Trials: print it with :func:`show_verdict`).
    ``one_look``: the Bar's look rule refuses extensions, so "how many more" plans a new Experiment."""
    look = verdict.get("look", 1)
    final = verdict.get("final", True)
    text = "".join(broken_text(b, exp_id) + "\n" for b in verdict.get("broken_arms", []))
    text += f"Verdict: {verdict['verdict']}" if final else f"Provisional Verdict (not final): {verdict['verdict']}"
    if verdict.get("interval"):
        lo, hi = verdict["interval"]
        text += f", interval [{lo:+.3f}, {hi:+.3f}] (Candidate − Baseline pass share)"
    decided_by = verdict.get("decided_by", "credible interval")
    every = ", valid at every look" if decided_by == "confidence sequence" else ""
    text += f"\n  Look {look}: decided by the {decided_by}{every}."
    if verdict.get("model_grader_shares_family"):
        text += f"\n  {shared_family_note(verdict['model_grader_shares_family'])}"
    for group in verdict.get("groups", []):
        if group.get("reason"):
            text += f"\n  {group['reason']}"
        more, chance = group.get("more_tasks"), group.get("more_tasks_chance")
        if group.get("spec_more_tasks") is not None:
            over = "more than " if group.get("spec_more_tasks_over_cap") else "about "
            text += (f"\n  How many more, the spec's figure (977 D55: the credible interval, judged at one look): {over}"
                     f"{group['spec_more_tasks']} more Eval tasks would give a clear Verdict with a "
                     f"{group['spec_more_tasks_chance']:.2f} chance.")
        rule = "How many more, the look rule's figure (the confidence sequence, valid at every look): "
        if more is not None and one_look:
            from assay.engine.results import one_look_advice

            text += f"\n  {one_look_advice(group)}"
        elif more is not None and group.get("more_tasks_over_cap"):
            text += (f"\n  {rule}more looks are unlikely to settle it: even {more} more Eval tasks give a "
                     f"{chance:.2f} chance of a clear Verdict at look {look + 1}.")
        elif more is not None:
            text += (f"\n  {rule}about {more} more Eval tasks would settle it at look {look + 1} "
                     f"(a {chance:.2f} chance): assay experiment {exp_id} --add-tasks SUITE/TASK,…")
        if not one_look and group.get("batch_tasks") is not None and group["batch_tasks"] < (more or 0):
            text += f"\n  {batch_text(group)}"
        if group.get("caveat"):
            text += f"\n  {group['caveat']}"
    if verdict.get("efficiency"):
        from assay.engine.results import efficiency_text

        judged = verdict["efficiency"]
        text += f"\n  {efficiency_text(judged)[0].upper()}{efficiency_text(judged)[1:]} (Candidate vs Baseline, paired per task)"
        text += f"\n  {judged['reason']}"
    for group in verdict.get("wrong_findings", []):
        text += f"\n  Wrong findings: {group['verdict']}, interval [{group['interval'][0]:+.3f}, {group['interval'][1]:+.3f}]"
    for pair in verdict.get("panel", []):
        call = pair.get("call")
        said = "calls missing" if call is None else "merge " + ", ".join(
            f"{arm.title()} {'yes' if v else 'tie' if v is None else 'no'}" for arm, v in call["merge"].items()
        ) + f"; prefers {(call['preference'] or 'neither').title()}"
        text += f"\n  Grader panel on {pair['pair']} ({'counted' if pair.get('counted') else 'beside'}): {said}"
    for warning in verdict.get("warnings", []):
        text += f"\n  Warning: {warning['text']}."
    if verdict.get("why"):
        text += f"\n  Inconclusive: {verdict['why']}"
    for wait in verdict.get("waiting", []):
        text += f"\n  {'Not final' if wait['blocks'] else 'Note'}: {wait['text']}"
    return text


def show_verdict(verdict: dict, exp_id: str, *, one_look: bool = False) -> None:
    """Print :func:`verdict_line`, escaped, its Verdict in its colour on a terminal."""
    say(verdict_line(verdict, exp_id, one_look=one_look), verdict=verdict["verdict"])


def batch_text(group: dict) -> str:
    """The batch plan beside the one jump "how many more" asks for (docs/verdict.md, "A few at a time")."""
    return (f"Or a few at a time, the look rule's batch plan: {group['batch_size']} more Eval tasks per look, for up to {group['batch_looks']} "
            f"looks, give a {group['batch_chance']:.2f} chance of a clear Verdict with about "
            f"{group['batch_tasks']:.0f} more expected in all (fewest for that chance; the confidence sequence "
            "is valid at every look, so looking more often costs no error).")


def broken_text(broken: dict, exp_id: str) -> str:
    """A broken Arm, said before its Verdict: how many Trials failed the same way, and the first cause."""
    every = "every" if broken["failed"] == broken["trials"] else f"{broken['failed']} of {broken['trials']}"
    return (f"Broken Arm: {every} Trial of the {broken['arm'].title()} failed the same way; first cause "
            f"({broken['trial']}): {broken['cause']}. This Verdict measures that breakage, not the "
            f"{broken['arm'].title()}: fix it (assay experiments {exp_id} shows each Trial's reason).")


def find_experiment(home: AssayHome, ref: str) -> Any:
    from assay.engine.results import find

    try:
        return find(home, ref)
    except ValueError as e:
        fail(str(e))


def command_record(home: AssayHome, id: str) -> Any:
    from assay.engine.results import command_of

    return command_of(home, id)


def publish_verdict(home: AssayHome, plugins: plugin_loading.Plugins, exp: Any) -> Any:
    """Recompute the Verdict after a person's record (a recheck, a review) and show it in the Inbox;
    the caller holds the Experiment's lock."""
    from assay.engine import results
    from assay.storage.userconfig import grading_config

    return results.publish(home, exp, results.wrong_finding_kinds(plugins), grading_config(home.root).families)

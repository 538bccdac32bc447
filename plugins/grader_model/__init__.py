"""The model Grader: a blind agent session scores one packet per Eval task.

Implements ``assay_graders``. The session runs through a Harness in the sandbox, seeing only its
packet, on the first seat from the Bar's ``model_graders`` whose Model is from a family neither
Arm runs on (the family rule, ``assay.storage.families``), else, with no such seat configured, on
the first that is neither Arm's own Model. Its answer is checked against a schema; an invalid answer is asked
for again once, then the Scores are left pending with the reason. A Trial whose report assay
refuses to read (a link, a FIFO, a device, too big) fails with why and stays out of the packet.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
from assay import hookimpl
from assay.evaltasks import timesafe
from assay.evaltasks.prompts import GRADER, PromptFile
from assay.hooks.protocols import GradingContext, Harness
from assay.plugins.grader_model import packet
from assay.sessions.grader_session import grader_session
from assay.storage import files
from assay.storage.families import arm_family, grader_seats
from assay.storage.git import git
from assay.storage.home import AssayHome
from assay.storage.records import EvalTask, Outcome, Score, TrialView
from assay.storage.scrub import AliasError, Scrubber, user_aliases
from assay.storage.untrusted import UntrustedFileError

PROMPT = PromptFile("grader.md", Path(__file__).parent / "prompts" / "grader.md", ("packet", "schema", "marker"), kind=GRADER)
ATTEMPTS = 2


def choose_seat(seats: Sequence[str], arms: Sequence[tuple[str | None, str | None]],
                families: Mapping[str, Sequence[str]] | None = None) -> tuple[str, str] | None:
    """The first seat the family rule allows (:func:`assay.storage.families.grader_seats`), else None."""
    taken = [arm_family(harness, model, families) for harness, model in arms]
    chosen, _ = grader_seats([s for s in seats if ":" in s], taken, [model for _, model in arms], families)
    if not chosen:
        return None
    harness, _, model = chosen[0].partition(":")
    return harness, model


class ModelGrader:
    name = "model"
    prompts = (PROMPT,)

    async def grade(self, task: EvalTask, trials: Sequence[TrialView], context: GradingContext) -> Sequence[Score]:
        seat = choose_seat(context.seats, context.arm_models, context.families)
        if seat is None:
            return self._pending(task, trials, "no model Grader seat other than the Arms' own Models is configured "
                                               "(--model-grader HARNESS:MODEL, or grading.seats in the User config)")
        if context.workspace is None or seat[0] not in context.harnesses:
            return self._pending(task, trials, f"the model Grader's Harness '{seat[0]}' is not installed")
        workspace = context.workspace
        try:
            built = await build_packet(task, trials, context, workspace)
        except AliasError as e:
            return self._pending(task, trials, str(e))
        refused, labelled, marker = built.refused, built.labelled, built.marker
        if not labelled:
            return refused
        judged = list(labelled.values())
        folder = workspace / "packet"
        note = ""
        for attempt in range(ATTEMPTS):
            outcome = await self._session(seat, folder, workspace / f"session-{attempt}", context, marker, note)
            if outcome.outcome is Outcome.VOID:
                why = f"the Grader session was void ({outcome.void_cause.value})"
                return refused + self._pending(task, judged, why)
            answer, problem = packet.read_answer(folder, labelled)
            if answer is not None:
                grader = f"model:{seat[0]}:{seat[1]}"
                return refused + [
                    Score(task.id, v.record.arm, v.record.index, grader, answer[label]["pass"], answer[label]["why"],
                          wrong_finding=answer[label]["wrong_finding"], borderline=answer[label]["borderline"],
                          label=label, evidence=str(folder.relative_to(workspace.parent.parent)))
                    for label, v in labelled.items()]
            note = f"\n\nYour previous answer was not usable: {problem}. Write {packet.ANSWER_FILE} again."
        return refused + self._pending(task, judged, f"the Grader's answer was invalid twice: {problem}")

    async def _session(self, seat: tuple[str, str], folder: Path, home: Path, context: GradingContext,
                       marker: str, note: str):
        prompt = PROMPT.render({"packet": packet.PACKET_FILE, "schema": json.dumps(packet.SCHEMA, indent=2),
                               "marker": marker}, assay_home=context.assay_home) + note
        return await grader_session(context.harnesses[seat[0]], seat[1], None, folder, home, prompt,
                                    context.backend, context.timeout, context.assay_home)

    def refusal(self, seats: Sequence[str], harnesses: Mapping[str, Harness], sandbox: str,
                unsandboxed: bool) -> str | None:
        """The check of the seats when the Experiment starts (the core has checked each is
        HARNESS:MODEL with a known Harness): that Harness's CLI is here, and no Grader session runs
        unsandboxed without the user's consent."""
        for seat in seats:
            harness = seat.partition(":")[0]
            try:
                harnesses[harness].locate()
            except Exception as e:  # locate() raises whatever its Harness raises when the CLI is missing
                return f"--model-grader '{seat}': the Harness '{harness}' can't be used here ({e})"
        if seats and sandbox == "none" and not unsandboxed:
            return ("--sandbox none: a model Grader's session would run unsandboxed, able to read your "
                    "credentials and every file of yours; pass --unsandboxed-grader to allow it")
        return None

    def _pending(self, task: EvalTask, trials: Sequence[TrialView], reason: str) -> list[Score]:
        return [Score(task.id, v.record.arm, v.record.index, self.name, False, reason, pending=reason) for v in trials]


@attrs.frozen
class BuiltPacket:
    """A written packet: Trials failed for a report assay refused to read, the rest by label."""

    refused: list[Score]
    labelled: dict[str, TrialView]
    marker: str


async def build_packet(task: EvalTask, trials: Sequence[TrialView], context: GradingContext,
                       workspace: Path) -> BuiltPacket:
    """Read each Trial's submission safely, scrub it, label it blind and write the packet (and the
    label key beside it) under ``workspace``."""
    scrub = _scrubber(trials, context, workspace)
    refused, readable, bodies = [], [], {}
    for view in trials:
        try:
            read = await packet.submission(task, view, context.backend, context.timeout, workspace / "read")
            bodies[view.record.arm, view.record.index] = scrub(read)
            readable.append(view)
        except UntrustedFileError as e:
            refused.append(Score(task.id, view.record.arm, view.record.index, "assay", False, f"{e}; it was not read"))
    if not readable:
        return BuiltPacket(refused, {}, "")
    labelled = packet.labels_for(readable, context.seed, task.id)
    files.write_json(workspace / "labels.json",  # the only key to the blinding: never inside the packet
                     {label: f"{v.record.task}:{v.record.arm}-{v.record.index}" for label, v in labelled.items()})
    marker = packet.write_packet(workspace / "packet", task,
                                 {label: bodies[v.record.arm, v.record.index] for label, v in labelled.items()},
                                 _diff_under_review(task, context))
    return BuiltPacket(refused, labelled, marker)


def _scrubber(trials: Sequence[TrialView], context: GradingContext, workspace: Path) -> Scrubber:
    """What would name an Arm: its Harness and Model (with their families' aliases), the Harness
    versions and session ids recorded, and the Experiment's folders and id."""
    experiment = workspace.parent.parent
    return Scrubber(harnesses=[h for h, _ in context.arm_models if h], models=[m for _, m in context.arm_models if m],
                    versions=context.harness_versions, session_ids=[v.record.session_id or "" for v in trials],
                    literals=[str(experiment), experiment.name, *(str(v.folder) for v in trials)],
                    aliases=user_aliases(context.assay_home))


def _diff_under_review(task: EvalTask, context: GradingContext) -> str:
    """The change under review, from the task's own time-safe cache: never from a Trial's copy,
    whose git config and objects its session could have rewritten."""
    if task.kind != "code-review" or not task.change or context.assay_home is None:
        return ""
    cached = timesafe.prepare_cache(AssayHome(context.assay_home), task.repository, task.change)
    return git("diff", "--no-ext-diff", "--no-textconv", task.base, cached.base, cwd=cached.path)


@hookimpl
def assay_graders() -> list[ModelGrader]:
    return [ModelGrader()]

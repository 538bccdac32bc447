"""The model Grader: a blind agent session scores one packet per Eval task.

Implements ``assay_graders``. The session runs through a Harness in the sandbox, seeing only its
packet, on a seat from the Bar's ``model_graders`` that shares neither Arm's Harness family or
Model when one is configured. Its answer is checked against a schema; an invalid answer is asked
for again once, then the Scores are left pending with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from assay import hookimpl
from assay.evaltasks.prompts import PromptFile
from assay.hooks.protocols import GradingContext, SessionRequest
from assay.plugins.grader_model import packet
from assay.storage import files
from assay.storage.git import GitError
from assay.storage.untrusted import capped_log
from assay.storage.untrusted_git import inspected
from assay.storage.records import EvalTask, Outcome, Score, TrialView

PROMPT = PromptFile("grader.md", Path(__file__).parent / "prompts" / "grader.md", ("packet", "schema"))
ATTEMPTS = 2


def choose_seat(seats: Sequence[str], arms: Sequence[tuple[str | None, str | None]]) -> tuple[str, str] | None:
    """The first seat from another family (Harness) and Model than both Arms, else another Model."""
    parsed = [tuple(s.split(":", 1)) for s in seats if ":" in s]
    harnesses = {h for h, _ in arms}
    models = {m for _, m in arms}
    for rule in (lambda h, m: h not in harnesses and m not in models, lambda h, m: m not in models, lambda h, m: True):
        for harness, model in parsed:
            if rule(harness, model):
                return harness, model
    return None


class ModelGrader:
    name = "model"
    prompts = (PROMPT,)

    async def grade(self, task: EvalTask, trials: Sequence[TrialView], context: GradingContext) -> Sequence[Score]:
        seat = choose_seat(context.seats, context.arm_models)
        if seat is None:
            return self._pending(task, trials, "no model Grader seat is configured (--model-grader HARNESS:MODEL)")
        if context.workspace is None or seat[0] not in context.harnesses:
            return self._pending(task, trials, f"the model Grader's Harness '{seat[0]}' is not installed")
        workspace = context.workspace
        labelled = packet.labels_for(trials, context.seed, task.id)
        files.write_json(workspace / "labels.json",  # the only key to the blinding: never inside the packet
                         {label: f"{v.record.task}:{v.record.arm}-{v.record.index}" for label, v in labelled.items()})
        folder = workspace / "packet"
        names = [n for pair in context.arm_models for n in pair if n]
        review_context = _diff_under_review(task, trials)
        packet.write_packet(folder, task, labelled, names, review_context)
        note = ""
        for attempt in range(ATTEMPTS):
            outcome = await self._session(task, seat, folder, workspace / f"session-{attempt}", context, note)
            if outcome.outcome is Outcome.VOID:
                return self._pending(task, trials, f"the Grader session was void ({outcome.void_cause.value})")
            answer, problem = packet.read_answer(folder, labelled)
            if answer is not None:
                grader = f"model:{seat[0]}:{seat[1]}"
                return [Score(task.id, v.record.arm, v.record.index, grader, answer[label]["pass"], answer[label]["why"],
                              wrong_finding=answer[label]["wrong_finding"], borderline=answer[label]["borderline"],
                              label=label, evidence=str(folder.relative_to(workspace.parent.parent)))
                        for label, v in labelled.items()]
            note = f"\n\nYour previous answer was not usable: {problem}. Write {packet.ANSWER_FILE} again."
        return self._pending(task, trials, f"the Grader's answer was invalid twice: {problem}")

    async def _session(self, task: EvalTask, seat: tuple[str, str], folder: Path, home: Path,
                       context: GradingContext, note: str):
        harness = context.harnesses[seat[0]]
        files.remove_tree(home)
        (home / "home").mkdir(parents=True)
        prompt = PROMPT.render({"packet": packet.PACKET_FILE, "schema": json.dumps(packet.SCHEMA, indent=2)}) + note
        request = SessionRequest(repository=folder, home=home / "home", prompt=prompt, binary=harness.locate(),
                                 model=seat[1], assay_home=context.assay_home)
        decoder = harness.decoder()
        with capped_log(home / "session.log") as log:
            def on_line(line: str) -> None:
                log.write(line if line.endswith("\n") else line + "\n")
                decoder.feed(line)

            process = await context.backend.run(harness.invocation(request), timeout=context.timeout, on_line=on_line)
        return decoder.finish(process)

    def _pending(self, task: EvalTask, trials: Sequence[TrialView], reason: str) -> list[Score]:
        return [Score(task.id, v.record.arm, v.record.index, self.name, False, reason, pending=reason) for v in trials]


def _diff_under_review(task: EvalTask, trials: Sequence[TrialView]) -> str:
    if task.kind != "code-review" or not task.change or not trials:
        return ""
    for view in trials:  # any Trial's copy holds the change; one that was tampered with is skipped
        try:
            with inspected(view.repository) as repo:
                return repo.git("diff", task.base, task.change)
        except GitError:
            continue
    return ""


@hookimpl
def assay_graders() -> list[ModelGrader]:
    return [ModelGrader()]

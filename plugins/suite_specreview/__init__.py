"""The spec-review suite kind: a session reviews a Spec as first published and pushes findings.

Implements ``assay_suite_kinds``. Its Trials get a local bare origin to push to; the code
Grader fails a Trial that pushed nothing, and the model Grader scores the pushed findings
against the task's known findings (real or wrong).
"""

from __future__ import annotations

from pathlib import Path

from assay import hookimpl
from assay.evaltasks.prompts import PromptFile
from assay.storage.records import EvalTask

PROMPT = PromptFile("spec-review.md", Path(__file__).parent / "prompts" / "spec-review.md", ("branch", "spec"))
FINDINGS = "findings.md"


class SpecReviewKind:
    name = "spec-review"
    trials_per_task = 1
    graders = ("code", "model")
    required_inputs = ("spec",)
    required_criteria = ("findings",)
    needs_change = False
    needs_origin = True
    wrong_findings = True
    prompts = (PROMPT,)
    branch = "main"

    def session_prompt(self, task: EvalTask, factory: Path | None = None) -> str:
        return PROMPT.render({"branch": self.branch, "spec": task.inputs["spec"].read_text().strip()}, factory)


@hookimpl
def assay_suite_kinds() -> list[SpecReviewKind]:
    return [SpecReviewKind()]

"""The code-review suite kind: a session reviews a change and must catch a known bug.

Implements ``assay_suite_kinds``. A Trial's repository ends at the change under review; the
session must leave it untouched (a changed repository voids the Trial) and writes its review to
``~/reports/review.md``. The code Grader fails a Trial with no report; the model Grader judges
the rest against the task's ``catch`` criterion.
"""

from __future__ import annotations

from pathlib import Path

from assay import hookimpl
from assay.evaltasks.prompts import PromptFile
from assay.storage.records import EvalTask

PROMPT = PromptFile("code-review.md", Path(__file__).parent / "prompts" / "code-review.md", ("base", "change", "reports"))
REPORTS = "reports"  # inside the Trial's fresh home


class CodeReviewKind:
    name = "code-review"
    trials_per_task = 3
    graders = ("code", "model")
    required_inputs: tuple[str, ...] = ()
    required_criteria = ("catch",)
    needs_change = True
    needs_origin = False
    review_only = True
    wrong_findings = True
    repository_at = "change"
    prompts = (PROMPT,)

    def session_prompt(self, task: EvalTask, factory: Path | None = None) -> str:
        return PROMPT.render({"base": task.base, "change": task.change or "", "reports": f"~/{REPORTS}"}, factory)


@hookimpl
def assay_suite_kinds() -> list[CodeReviewKind]:
    return [CodeReviewKind()]

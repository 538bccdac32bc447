"""The code-review suite kind: a session reviews a change and must catch a known bug.

Implements ``assay_suite_kinds``. The manifest rules below are the format (docs/eval-tasks.md);
the session itself (prompt, reports, Graders) lands with roadmap step 7.
"""

from __future__ import annotations

from assay import hookimpl
from assay.evaltasks import EvalTask
from assay.protocols import Pending


class CodeReviewKind(Pending):
    name = "code-review"
    kind_label = "suite kind"
    roadmap = "roadmap step 7: model Graders and the review suites"
    trials_per_task = 3
    graders = ("code", "model")
    required_inputs: tuple[str, ...] = ()
    required_criteria = ("catch",)
    needs_change = True
    needs_origin = False

    def session_prompt(self, task: EvalTask) -> str:
        raise self._pending()


@hookimpl
def assay_suite_kinds() -> list[CodeReviewKind]:
    return [CodeReviewKind()]

"""The spec-review suite kind: a session reviews a Spec as first published and pushes findings.

Implements ``assay_suite_kinds``. Its tasks get a local bare origin to push to. The manifest
rules below are the format (docs/eval-tasks.md); the session lands with roadmap step 7.
"""

from __future__ import annotations

from assay import hookimpl
from assay.evaltasks import EvalTask
from assay.protocols import Pending


class SpecReviewKind(Pending):
    name = "spec-review"
    kind_label = "suite kind"
    roadmap = "roadmap step 7: model Graders and the review suites"
    trials_per_task = 1
    graders = ("code", "model")
    required_inputs = ("spec",)
    required_criteria = ("findings",)
    needs_change = False
    needs_origin = True

    def session_prompt(self, task: EvalTask) -> str:
        raise self._pending()


@hookimpl
def assay_suite_kinds() -> list[SpecReviewKind]:
    return [SpecReviewKind()]

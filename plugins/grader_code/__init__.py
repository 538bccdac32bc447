"""The code Grader: mechanical checks that run before any model judges a Trial.

Implements ``assay_graders``. Its checks (test commands on committed HEAD, unchanged
repositories for reviews, reports present) land with roadmap step 4.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay import hookimpl
from assay.evaltasks import EvalTask
from assay.protocols import Pending
from assay.records import Score, TrialView


class CodeGrader(Pending):
    name = "code"
    kind_label = "grader"
    roadmap = "roadmap step 4: process suites and the code Grader"

    async def grade(self, task: EvalTask, trials: Sequence[TrialView]) -> Sequence[Score]:
        raise self._pending()


@hookimpl
def assay_graders() -> list[CodeGrader]:
    return [CodeGrader()]

"""The process suite kind: a session implements an issue on a branch and commits; the task's test
command, run offline on the committed HEAD, decides pass or fail.

Implements ``assay_suite_kinds``. Its tasks are graded by the code Grader alone.
"""

from __future__ import annotations

from pathlib import Path

from assay import hookimpl
from assay.evaltasks.prompts import PromptFile
from assay.storage.records import EvalTask

PROMPT = PromptFile("process.md", Path(__file__).parent / "prompts" / "process.md", ("branch", "issue"))


class ProcessKind:
    name = "process"
    trials_per_task = 3
    graders = ("code",)
    required_inputs = ("issue",)
    required_criteria = ("test_command",)
    needs_change = False
    needs_origin = False
    prompts = (PROMPT,)
    branch = "main"

    def session_prompt(self, task: EvalTask, factory: Path | None = None) -> str:
        return PROMPT.render({"branch": self.branch, "issue": task.inputs["issue"].read_text().strip()}, factory)


@hookimpl
def assay_suite_kinds() -> list[ProcessKind]:
    return [ProcessKind()]

"""The process suite kind: a session implements an issue on a branch and commits; the task's test
command, run offline on the committed HEAD, decides pass or fail.

Implements ``assay_suite_kinds``. Its tasks are graded by the code Grader alone.
"""

from __future__ import annotations

from assay import hookimpl
from assay.evaltasks import EvalTask

PROMPT = """\
You are working in a git repository checked out on branch `{branch}`.
Implement the issue below. Commit your work on this branch when you are done: only committed
work counts, and it is judged by the project's tests, run offline.

--- issue ---
{issue}
"""


class ProcessKind:
    name = "process"
    trials_per_task = 3
    graders = ("code",)
    required_inputs = ("issue",)
    required_criteria = ("test_command",)
    needs_change = False
    needs_origin = False
    branch = "main"

    def session_prompt(self, task: EvalTask) -> str:
        return PROMPT.format(branch=self.branch, issue=task.inputs["issue"].read_text().strip())


@hookimpl
def assay_suite_kinds() -> list[ProcessKind]:
    return [ProcessKind()]

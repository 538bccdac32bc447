"""The careful demo runner (``demo-careful``): a scripted stand-in for a good agent.

It reproduces the failure, applies the right fix for the task from its bundle
(``solutions/<task>/``), runs the tests, and commits only the files it changed, only when the
tests pass. It is a script, not an AI agent: it knows nothing beyond the bundled demo tasks.
"""

from __future__ import annotations

import sys

sys.dont_write_bytecode = True  # the frozen bundle must stay exactly as frozen: no __pycache__

import common  # noqa: E402  (after the bytecode switch)

NAME = "demo-careful"
SCRATCH = ".demo-careful/notes.md"


def main() -> int:
    common.banner(NAME)
    request = common.read_request()
    solution = request.bundled("solutions")
    if solution is None:
        common.write_result(request, "failed", f"no scripted fix for task '{request.task}': "
                            "the demo runners only know the bundled assay-demo tasks")
        return 0
    _on_branch(request)
    title = common.issue_title(request)
    common.note(request, SCRATCH, f"# {title}")

    passed, tail = common.run_tests(request.repository)
    common.note(request, SCRATCH, "tests already pass at base" if passed else f"reproduced, tests fail:\n{tail}")
    changed = common.apply(solution, request.repository)
    common.note(request, SCRATCH, f"edited: {', '.join(changed)}")

    passed, tail = common.run_tests(request.repository)
    if not passed:
        common.write_result(request, "failed", f"the fix did not make the tests pass, so nothing was committed: {tail}")
        return 0
    head = common.commit(request.repository, f"Fix: {title}\n\nEdited {', '.join(changed)}; the tests pass.", changed)
    common.write_result(request, "delivered", f"fixed '{title}' in {', '.join(changed)}; tests pass; committed {head}")
    return 0


def _on_branch(request: common.Request) -> None:
    """Make sure the work lands on the requested branch (assay checks it out; a careful agent checks)."""
    current = common.git(request.repository, "rev-parse", "--abbrev-ref", "HEAD")
    if current != request.branch:
        common.git(request.repository, "switch", request.branch)


if __name__ == "__main__":
    sys.exit(main())

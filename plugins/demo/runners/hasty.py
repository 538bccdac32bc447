"""The hasty demo runner (``demo-hasty``): a scripted stand-in for a sloppy agent.

It never runs the tests. On each task it has habits, drawn per Trial with fixed odds: apply the
right fix, apply a quick fix that misses part of the issue (``shortcuts/<task>/``), forget to
commit, stop to ask, or give up. It says honestly what it did. It is a script, not an AI agent.
"""

from __future__ import annotations

import sys

sys.dont_write_bytecode = True  # the frozen bundle must stay exactly as frozen: no __pycache__

import common  # noqa: E402  (after the bytecode switch)

NAME = "demo-hasty"
SCRATCH = ".demo-hasty.log"

# Per demo task: how many times in six the hasty runner does each thing. Three tasks trip it
# up the same way every time (it forgets to commit, asks, or gives up); on the others it draws,
# per Trial, between the right fix and a quick one that misses part of the issue. Over the
# suite it gets about 30% right, against the careful runner's 100%.
HABITS: dict[str, dict[str, int]] = {
    "pager-off-by-one": {"solve": 3, "shortcut": 3},
    "slugify-unicode": {"solve": 2, "shortcut": 4},
    "money-rounding": {"solve": 4, "shortcut": 2},
    "report-empty-day": {"solve": 3, "shortcut": 3},
    "version-strict": {"solve": 3, "shortcut": 3},
    "date-day-first": {"forget_commit": 6},
    "config-deep-merge": {"ask": 6},
    "duration-rounding": {"give_up": 6},
}


def main() -> int:
    common.banner(NAME)
    request = common.read_request()
    habits = HABITS.get(request.task_name)
    if habits is None:
        common.write_result(request, "failed", f"no scripted habits for task '{request.task}': "
                            "the demo runners only know the bundled assay-demo tasks")
        return 0
    habit = common.trial_rng(request).choices(list(habits), weights=list(habits.values()))[0]
    common.note(request, SCRATCH, f"{request.task}: {habit}")
    outcome, summary = ACTIONS[habit](request)
    common.write_result(request, outcome, summary)
    return 0


def solve(request: common.Request) -> tuple[str, str]:
    changed = common.apply(request.bundled("solutions"), request.repository)
    head = common.commit(request.repository, "fix")
    return "delivered", f"fixed it in {', '.join(changed)} (tests not run); committed {head}"


def shortcut(request: common.Request) -> tuple[str, str]:
    changed = common.apply(request.bundled("shortcuts"), request.repository)
    head = common.commit(request.repository, "quick fix")
    return "delivered", f"quick fix in {', '.join(changed)}, covering the first example of the issue (tests not run); committed {head}"


def forget_commit(request: common.Request) -> tuple[str, str]:
    changed = common.apply(request.bundled("solutions"), request.repository)
    return "delivered", f"fixed it in {', '.join(changed)} (tests not run)"


def ask(request: common.Request) -> tuple[str, str]:
    return "stopped_to_ask", "the issue is unclear to me: should nested sections merge, or replace the defaults?"


def give_up(request: common.Request) -> tuple[str, str]:
    return "failed", "could not find the cause quickly; gave up without changing anything"


ACTIONS = {"solve": solve, "shortcut": shortcut, "forget_commit": forget_commit, "ask": ask, "give_up": give_up}


if __name__ == "__main__":
    sys.exit(main())

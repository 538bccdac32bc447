"""What a blind reader of a pair (a panel seat, a person) may be told, read from the Experiment's folder."""

from __future__ import annotations

from assay.engine.folder import ExperimentDir, Slot
from assay.pairs.blind import identifying_words
from assay.storage.records import ARMS, Arm, Bar, Setup


def words(exp: ExperimentDir, setup: Setup, bar: Bar) -> list[str]:
    """What would tell the Arms apart: Harnesses, Models, versions, runners, folders, session ids."""
    arms = [setup.arm(arm) for arm in ARMS]
    sessions = [r.session_id for slot in exp.slots(setup.tasks) for r in exp.slot_state(slot, bar).records]
    return identifying_words([*(v for a in arms for v in (a.harness, a.model, a.effort, a.harness_version, a.runner)),
                              str(exp.path), exp.id, *sessions])


def outcome(exp: ExperimentDir, bar: Bar, task: str, arm: Arm, index: int) -> str:
    """A side's outcome: how its session ended and whether the task's tests pass on its final commit."""
    slot = Slot(task, arm, index)
    record = exp.slot_state(slot, bar).last
    score = exp.score(slot)
    ended = f"the session ended {record.outcome.value}" if record else "the session did not finish"
    if score is None:
        return ended
    return ended + ("; the task's tests pass on its final commit" if score.passed
                    else "; the task's tests fail on its final commit")

"""Finished Experiments written straight with the storage layer (Setup, Bar, each Trial's
``trial.json`` and Score, the Verdict, the Command record: what a finished run leaves), for tests
and benchmarks that need an Experiment of any size without running its Trials."""

from __future__ import annotations

import datetime as dt
import zlib

from assay.engine.folder import ExperimentDir
from assay.engine.results import experiment_verdict, record_verdict
from assay.storage import formats
from assay.storage.home import AssayHome
from assay.storage.records import ArmSetup, Bar, CommandRecord, Outcome, Score, Setup, TaskSetup, TrialRecord

TRIALS_PER_TASK = 3
START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def write_experiment(home: AssayHome, n: int, trials: int) -> str:
    """A finished Experiment of about ``trials`` Trials (both Arms, 3 per task), graded, with its Verdict."""
    tasks = tuple(TaskSetup(f"written/task-{t:04d}", "process", TRIALS_PER_TASK, base="0" * 40)
                  for t in range(max(1, trials // (2 * TRIALS_PER_TASK))))
    exp_id = f"x{n:011d}"
    arm = ArmSetup(runner=f"baseline-{n}", runner_digest="0" * 64)
    setup = Setup(id=exp_id, baseline=arm, candidate=ArmSetup(runner=f"candidate-{n}", runner_digest="1" * 64),
                  suites=("written",), tasks=tasks, sandbox="none", factory=None, created_at=START + dt.timedelta(minutes=n))
    bar = Bar(draws=2000)
    exp = ExperimentDir(home.experiments / exp_id)
    formats.write(exp.setup_file, setup)
    formats.write(exp.bar_file, bar)
    for slot in exp.slots(tasks):
        folder = exp.attempt_folder(slot, 0)
        started = setup.created_at + dt.timedelta(seconds=slot.index)
        formats.write(folder / "trial.json", TrialRecord(
            task=slot.task, arm=slot.arm, index=slot.index, attempt=0, outcome=Outcome.DELIVERED,
            started_at=started, ended_at=started + dt.timedelta(seconds=30), backend="none", exit_code=0))
        (folder / "session.log").write_text('{"type": "result"}\n')
        draw = zlib.crc32(slot.key.encode())  # the same passes on every machine
        passed = draw % 3 != 0 if slot.arm == "candidate" else draw % 2 == 0
        formats.write(exp.score_file(slot), Score(task=slot.task, arm=slot.arm, index=slot.index, grader="code",
                                                  passed=passed, why="tests", graded=exp.in_force(slot)))
    result = experiment_verdict(exp, setup, bar)
    record_verdict(exp, result)
    formats.write(home.command_logs("experiment") / f"{exp_id}.json", CommandRecord(
        kind="experiment", id=exp_id, state="done", started_at=setup.created_at,
        ended_at=setup.created_at + dt.timedelta(hours=1), outcome=result.verdict, summary="written"))
    return exp_id

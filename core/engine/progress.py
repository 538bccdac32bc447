"""How far an Experiment has got, from its folder alone: Trials done of all, which run now and for how
long, voids and re-runs, tasks graded, time spent and an estimate of what is left (the Console's live
page reads it while the Experiment runs)."""

from __future__ import annotations

import datetime as dt
import statistics
from typing import Any

from assay.engine.folder import ExperimentDir
from assay.storage.commands import runs
from assay.storage.records import CommandRecord, Outcome


def progress(exp: ExperimentDir, command: CommandRecord | None, now: dt.datetime) -> dict[str, Any]:
    """``total`` Trials, ``done`` (finished for good), ``running`` (each with its task, Arm, attempt and
    seconds so far, while the Command runs), ``void`` Trials and ``reruns`` (attempts after the first),
    ``graded`` of ``tasks``, ``elapsed`` seconds of this run and ``left`` seconds expected (None before a
    Trial has finished, or once nothing is left)."""
    setup, bar = exp.setup(), exp.bar()
    live = command is not None and runs(command)
    slots = list(exp.slots(setup.tasks))
    states = [exp.slot_state(slot, bar) for slot in slots]
    running = []
    for slot in slots if live else ():
        flight = exp.in_flight(slot)
        if flight is not None:
            attempt, since = flight
            running.append({"task": slot.task, "arm": slot.arm, "index": slot.index, "attempt": attempt,
                            "seconds": max(0, round((now - since).total_seconds()))})
    records = [r for state in states for r in state.records]
    done = sum(1 for state in states if state.next_attempt is None)
    started = sum(len(exp.attempts(slot)) for slot in slots)
    tasks = list(dict.fromkeys(slot.task for slot in slots))
    graded = sum(1 for task in tasks if all(exp.score(s) is not None for s in slots if s.task == task))
    durations = [(r.ended_at - r.started_at).total_seconds() for r in records]
    left = len(slots) - done - len(running)
    estimate = None
    if durations and live and (left or running):
        mean, at_once = statistics.fmean(durations), max(1, len(running))
        estimate = round((left * mean + sum(max(0.0, mean - r["seconds"]) for r in running)) / at_once)
    return {
        "total": len(slots), "done": done, "running": running, "left_trials": max(0, left),
        "void": sum(1 for r in records if r.outcome is Outcome.VOID),
        "reruns": started - sum(1 for slot in slots if exp.attempts(slot)),
        "tasks": len(tasks), "graded": graded,
        "elapsed": round(((now if live else command.ended_at or now) - command.started_at).total_seconds())
        if command else None,
        "left": estimate, "from_trials": len(durations),
    }

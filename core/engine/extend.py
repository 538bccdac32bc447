"""Extending an inconclusive Experiment with more Eval tasks: a new look (docs/verdict.md, "More looks").

The Trials already run are kept; the look is recorded in ``looks.json`` in one atomic write
(when, how many tasks, which were added, and a warning when some come from a suite the first look
had none of), and the Verdict that ends it is judged by the Bar's look rule, which counts every
look. A pass or a fail is final and can't be extended.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import attrs
from assay.engine import results
from assay.engine.folder import ExperimentDir
from assay.engine.start import PlanError
from assay.evaltasks import manifests
from assay.evaltasks.manifests import ManifestError
from assay.hooks.loaded import Plugins
from assay.storage import formats
from assay.storage.commands import now
from assay.storage.files import Locked, NotALockFile, exclusive_lock
from assay.storage.home import AssayHome
from assay.storage.records import Look, Looks, LookWarning, TaskSetup


def add_look(home: AssayHome, plugins: Plugins, exp: ExperimentDir, task_ids: Sequence[str]) -> Look | None:
    """Record the look that adds ``task_ids``, or None when they are exactly the last look's
    (the same command run again resumes that look). Refuses with :class:`PlanError`."""
    try:
        with exclusive_lock(exp.lock_file):
            return _add_look(home, plugins, exp, list(dict.fromkeys(task_ids)))
    except Locked:
        raise PlanError(f"Experiment {exp.id} is already running in another process") from None
    except NotALockFile as e:
        raise PlanError(str(e)) from None


def _add_look(home: AssayHome, plugins: Plugins, exp: ExperimentDir, wanted: list[str]) -> Look | None:
    setup, bar, looks = exp.setup(), exp.bar(), exp.looks()
    if len(looks) > 1 and set(wanted) == {t.id for t in looks[-1].added}:
        return None
    if bar.look_rule == "one-look":
        raise PlanError(f"Experiment {exp.id}: its Bar's look rule is one-look, so it can't be extended "
                        "(start a new Experiment, with --look-rule confidence-sequence or confidence-sequence-only)")
    verdict = formats.read(exp.verdict_file, results.ExperimentVerdict) if exp.verdict_file.exists() else None
    if verdict is None or verdict.pending or verdict.look < len(looks):
        how = (f"`assay experiment {exp.id} --add-tasks {','.join(t.id for t in looks[-1].added)}` resumes it"
               if len(looks) > 1 else "run the command that started it again")
        raise PlanError(f"Experiment {exp.id} has no Verdict at look {len(looks)} yet: finish that look before "
                        f"adding tasks ({how})")
    if verdict.verdict != "inconclusive":
        raise PlanError(f"Experiment {exp.id} ended in a {verdict.verdict} at look {verdict.look}: only an "
                        "inconclusive Experiment can be extended (a pass or a fail is final)")
    present = {t.id for t in setup.tasks}
    already = [t for t in wanted if t in present]
    if already:
        raise PlanError(f"--add-tasks {already[0]}: Experiment {exp.id} already has this Eval task")
    added = tuple(_task_setup(home, plugins, bar.trials_per_task, task_id) for task_id in wanted)
    done = attrs.evolve(looks[-1], verdict=verdict.verdict, interval=verdict.interval, decided_by=verdict.decided_by)
    look = Look(len(looks) + 1, now(), len(setup.tasks) + len(added), added,
                warnings=other_suites(len(looks) + 1, {t.id for t in setup.tasks}, [t.id for t in added]))
    formats.write(exp.looks_file, Looks((*looks[:-1], done, look)))
    return look


def other_suites(number: int, first: Collection[str], added: Sequence[str]) -> tuple[LookWarning, ...]:
    """The warning for added tasks from a suite the first look had none of: another suite's tasks may
    be easier or harder, and every interval assumes they are drawn like the first look's."""
    suites = {task.partition("/")[0] for task in first}
    strangers = [task for task in added if task.partition("/")[0] not in suites]
    if not strangers:
        return ()
    names = sorted({task.partition("/")[0] for task in strangers})
    return (LookWarning(number, "other suite", (
        f"look {number} added {len(strangers)} of its {len(added)} Eval tasks from "
        f"{'a suite' if len(names) == 1 else 'suites'} not in the first look ({', '.join(names)}): the Verdict "
        f"assumes every task is drawn like the first look's ({', '.join(sorted(suites))}), and tasks from another "
        "suite may be easier or harder (a Candidate at the margin then passes far more often than the rule says; "
        "docs/verdict.md)"),),)


def _task_setup(home: AssayHome, plugins: Plugins, trials: Mapping[str, int], task_id: str) -> TaskSetup:
    suite_name, _, name = task_id.partition("/")
    if not suite_name or not name:
        raise PlanError(f"--add-tasks {task_id}: name an Eval task as SUITE/TASK")
    try:
        suite = manifests.load_suite(home, suite_name, plugins.suite_kinds())
    except ManifestError as e:
        raise PlanError(f"--add-tasks {task_id}: {e}") from None
    task = next((t for t in suite.tasks if t.id == task_id), None)
    if task is None:
        raise PlanError(f"--add-tasks {task_id}: suite '{suite_name}' has no task '{name}'")
    per_task = trials.get(task.kind)
    if per_task is None:
        raise PlanError(f"--add-tasks {task_id}: the Bar sets no Trials per task for its kind '{task.kind}' "
                        "(add tasks of the kinds the Experiment already runs)")
    return TaskSetup(task.id, task.kind, per_task, task.base, task.change, manifests.inputs_digest(task))

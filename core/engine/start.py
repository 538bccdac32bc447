"""Starting an Experiment: everything checked before the first Trial, then the run itself.

:func:`plan` resolves both Arms, the suites and the Bar and refuses bad input with one line
(:class:`PlanError`); :func:`start` records the Setup and the Bar, takes the Experiment's lock,
writes the Command record and runs it.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
from assay.engine import preflight, results, touched
from assay.engine.arms import RUNNER_KIND, ArmError, ArmFlags, resolve_arms
from assay.engine.factory import Factory, FactoryError
from assay.engine.folder import ExperimentDir, bar_differences, experiment_id
from assay.evaltasks import manifests
from assay.evaltasks.manifests import ManifestError
from assay.evaltasks.prompts import PromptError
from assay.hooks.loaded import PluginError, Plugins
from assay.hooks.protocols import (LOCAL_EXECUTOR, ArmKind, ArmRuntime, CannotGoOn, Executor, ExecutorOptions,
                                   ExecutorUnreachable, Harness, NotYetImplemented, SandboxBackend, SeatedGrader,
                                   SuiteKind)
from assay.pairs.votes import voting_families
from assay.sessions import interrupts
from assay.sessions.credentials import CredentialsError
from assay.sessions.harness_arm import HarnessArm
from assay.storage import formats
from assay.storage.commands import Command, now
from assay.storage.families import arm_family, family_of, grader_seats, seat_model
from assay.storage.files import Locked, NotALockFile, exclusive_lock, private_folder
from assay.storage.home import AssayHome
from assay.storage.records import ARMS, GRADERS, Arm, ArmSetup, Bar, EvalTask, Release, Setup, Suite, TaskSetup
from assay.storage.userconfig import CONFIG, GradingConfig, UserConfigError, executor_config, grading_config

if TYPE_CHECKING:
    from assay.engine.runner import ExperimentRun
    from assay.scripted_provider.experiment import ArmScript


class PlanError(ValueError):
    """Bad input, refused before any Trial (exit code 2)."""


class Refused(PlanError):
    """The Experiment these Arms name already ran with another Bar or other Eval tasks: it stands as
    it is; ``--new`` or ``--label`` starts a fresh one beside it."""


class AlreadyRunning(PlanError):
    """The Experiment is running in another process (``assay release-check`` waits for it)."""


class NothingTouched(Exception):
    """No Eval suite is touched by the change: nothing to run (not an error)."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


class ExperimentErrored(RuntimeError):
    """The run broke (not the Arms' fault); the Command log has the traceback (exit code 1)."""


def _root_cause(error: BaseException) -> BaseException:
    """The first real error inside trio's exception groups (cancellations are only its echo)."""
    if isinstance(error, BaseExceptionGroup):
        leaves = [_root_cause(e) for e in error.exceptions]
        real = [e for e in leaves if type(e).__name__ != "Cancelled"]
        return (real or leaves)[0]
    return error


@contextlib.contextmanager
def _stop_as_ctrl_c() -> Iterator[None]:
    """``assay stop``'s SIGTERM taken as Ctrl-C (a KeyboardInterrupt: the run stops and is recorded
    stopped) from the moment the Command is recorded running, which is when the Console offers Stop,
    until the run watches for it itself; by default it would kill the process unrecorded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupted(error: BaseException) -> bool:
    """A Ctrl-C that reached the run before its own handler did: KeyboardInterrupt, alone or in
    trio's exception groups beside the cancellations it caused."""
    if isinstance(error, BaseExceptionGroup):
        leaves = [e for e in error.exceptions if type(e).__name__ != "Cancelled"]
        return bool(leaves) and all(_interrupted(e) for e in leaves)
    return isinstance(error, KeyboardInterrupt)


@attrs.frozen
class Plan:
    """A checked Experiment, ready to start or resume."""

    setup: Setup
    bar: Bar
    tasks: Mapping[str, EvalTask]
    sources: Mapping[Arm, Harness | ArmKind]  # what runs each Arm's sessions
    backend: SandboxBackend
    factory: Factory | None
    chosen_because: tuple[str, ...] = ()  # when the suites were chosen from the change
    scripts: Mapping[Arm, ArmScript] = attrs.field(factory=dict)  # a scripted Experiment's, per Arm
    grader_script: ArmScript | None = None  # what its Grader sessions play, when they are scripted too

    @property
    def id(self) -> str:
        return self.setup.id


def plan(
    home: AssayHome,
    plugins: Plugins,
    *,
    factory_path: Path | None,
    candidate: ArmFlags,
    baseline: ArmFlags,
    suites: Sequence[str],
    bar: Bar,
    trials_per_task: int | None = None,
    sandbox: str | None = None,
    sandbox_fallback: bool = False,
    scripts: Mapping[str, Path] | None = None,
    unsandboxed_grader: bool = False,
    release: Release | None = None,
) -> Plan:
    try:
        if not suites and (candidate.runner or baseline.runner):
            raise PlanError("a Custom-runner Arm needs --suite (suites are chosen from a Factory change otherwise)")
        factory, base_arm, cand_arm = resolve_arms(plugins, home.root, factory_path, candidate, baseline)
        chosen_because: list[str] = []
        if not suites:
            suites, chosen_because = _touched(home, plugins, factory, base_arm, cand_arm, baseline, candidate)
        loaded = [manifests.load_suite(home, name, plugins.suite_kinds()) for name in dict.fromkeys(suites)]
        sources = {arm: _source(plugins, setup, loaded) for arm, setup in zip(ARMS, (base_arm, cand_arm))}
        given = dict(scripts or {})
        graders_played = given.pop(GRADERS, None)
        played = _scripts(given, sources)
        graded_by_model = any("model" in plugins.suite_kinds()[s.kind].graders for s in loaded)
        config = _grading_config(home)
        seats_from = "--model-grader"
        if graded_by_model and not bar.model_graders and not played and config.seats:
            bar = attrs.evolve(bar, model_graders=config.seats)  # the User config's standing seats
            seats_from = f"{home.root / 'config.toml'}: grading.seats"
        if not played:  # a scripted run brings its own stand-in login
            _logins_present(home, sources, (base_arm, cand_arm))
        graded = _grader_script(plugins, bar, graders_played, bool(played))
        if played and graded is None and (bar.model_graders or graded_by_model or bar.panel != "off"):
            raise PlanError("--scripted-provider: model Graders would make real model calls; a scripted "
                            "Experiment runs only suites its code Graders decide, with no --model-grader, "
                            f"unless {GRADERS}=SCRIPT scripts its Grader sessions too")
        if graded is not None:
            bar = attrs.evolve(bar, scripted_graders=graded.digest)
        if played:
            base_arm, cand_arm = played["baseline"].mark(base_arm), played["candidate"].mark(cand_arm)
        backend = _backend(plugins, sandbox, sandbox_fallback)
        kinds = plugins.suite_kinds()
        _check_seats(plugins, bar.model_graders, seats_from)
        if graded_by_model:
            shared = _grader_family(bar.model_graders, (base_arm, cand_arm), config, seats_from)
            bar = attrs.evolve(bar, model_grader_shared_family=shared)
        _graders_can_sit(plugins, {g for s in loaded for g in kinds[s.kind].graders}, bar, backend, unsandboxed_grader)
        if bar.panel != "off":
            _panel_can_sit(plugins, bar, backend, unsandboxed_grader, (base_arm, cand_arm), config)
        tasks = {t.id: t for s in loaded for t in s.tasks}
        for task in tasks.values():  # every bundled prompt renders for its task, or we say why now
            kinds[task.kind].session_prompt(task)
        bar = _bar_for(bar, {s.kind: kinds[s.kind] for s in loaded}, trials_per_task)
    except (ArmError, FactoryError, ManifestError, PluginError, NotYetImplemented, PromptError) as e:
        raise PlanError(str(e)) from None
    setup = Setup(
        id=experiment_id(base_arm, cand_arm, [s.name for s in loaded]),
        baseline=base_arm, candidate=cand_arm, suites=tuple(s.name for s in loaded),
        tasks=tuple(TaskSetup(t.id, t.kind, bar.trials_per_task[t.kind], t.base, t.change, manifests.inputs_digest(t))
                    for s in loaded for t in s.tasks),
        sandbox=backend.name,
        factory=str(factory.root) if factory else None, created_at=now(), release=release,
    )
    return Plan(setup, bar, tasks, sources, backend, factory, tuple(chosen_because), scripts=played,
                grader_script=graded)


def _touched(home: AssayHome, plugins: Plugins, factory: Factory | None, base: ArmSetup, cand: ArmSetup,
             baseline: ArmFlags, candidate: ArmFlags) -> tuple[list[str], list[str]]:
    """The suites the Baseline→Candidate change touches; :class:`NothingTouched` when there are none."""
    assert factory is not None and base.commit and cand.commit
    kinds = plugins.suite_kinds()
    flags = [{"harness": f.harness, "model": f.model, "effort": f.effort} for f in (baseline, candidate)]
    touches = touched.touched_suites(home, kinds, factory, base.commit, cand.commit,
                                     baseline_flags=flags[0], candidate_flags=flags[1])
    lines = touched.explain(touches, manifests.list_suite_names(home))
    if not touches:
        raise NothingTouched(lines)
    return [t.suite for t in touches], lines


def _source(plugins: Plugins, setup: ArmSetup, suites: Sequence[Suite]) -> Harness | ArmKind:
    if not setup.runner:
        return plugins.get("assay_harnesses", setup.harness)
    kind = plugins.get("assay_arm_kinds", RUNNER_KIND)
    for suite in suites:
        if suite.kind not in kind.suite_kinds:
            raise PlanError(
                f"a Custom-runner Arm runs only {', '.join(kind.suite_kinds)} suites; '{suite.name}' is a {suite.kind} suite"
            )
    return kind


def _logins_present(home: AssayHome, sources: Mapping[Arm, Harness | ArmKind], arms: Sequence[ArmSetup]) -> None:
    """Refuse an Arm whose Harness has no login here: its every Trial would only be void."""
    for arm, setup in zip(ARMS, arms):
        source = sources[arm]
        try:
            present = not hasattr(source, "login_present") or source.login_present(home.root)
        except CredentialsError as e:  # a login table it can't read: the one line naming file and field
            raise PlanError(f"the {arm.title()}'s Harness '{setup.harness}': {e}") from None
        if not present:
            raise PlanError(f"the {arm.title()}'s Harness '{setup.harness}' has no login on this machine "
                            f"(`assay harnesses` shows each; `assay setup` stores Claude Code's token)")


def _graders_can_sit(plugins: Plugins, names: set[str], bar: Bar, backend: SandboxBackend, unsandboxed: bool) -> None:
    """Refuse model Grader seats that could never grade (no model, no such Harness, not installed,
    or unsandboxed without consent) now, not after every Trial has run."""
    for name in sorted(names):
        grader = plugins.get("assay_graders", name)
        if isinstance(grader, SeatedGrader):
            why = grader.refusal(bar.model_graders, plugins.harnesses(), backend.name, unsandboxed)
            if why:
                raise PlanError(why)


def _scripts(paths: Mapping[Arm, Path], sources: Mapping[Arm, Harness | ArmKind]) -> dict[Arm, ArmScript]:
    """Each Arm's script for a scripted Experiment (none for a real one)."""
    if not paths:
        return {}
    from assay.scripted_provider.experiment import load_arm_scripts

    try:
        return load_arm_scripts(paths, sources)
    except (ValueError, OSError) as e:
        raise PlanError(f"--scripted-provider: {e}") from None


def _grader_script(plugins: Plugins, bar: Bar, path: Path | None, played: bool) -> ArmScript | None:
    """The script a scripted Experiment's Grader sessions play (``grader=SCRIPT``), if given."""
    if path is None:
        return None
    from assay.scripted_provider.experiment import grader_script

    harnesses = plugins.harnesses()
    seated = _seated(bar)
    try:
        return grader_script(path, {h: harnesses[h] for h in seated if h in harnesses}, played)
    except (ValueError, OSError) as e:
        raise PlanError(f"--scripted-provider: {e}") from None


def _seated(bar: Bar) -> list[str]:
    """The Harnesses the Bar's model Grader and panel seats run on, in order."""
    return list(dict.fromkeys([s.partition(":")[0] for s in bar.model_graders] + [s.harness for s in bar.panel_seats]))


def _bar_for(bar: Bar, kinds: Mapping[str, SuiteKind], override: int | None) -> Bar:
    """The Bar with Trials per task for every kind in play: the override, the Bar's, else the kind's."""
    if override is not None and override < 1:
        raise PlanError(f"--trials-per-task must be 1 or more, got {override}")
    per_kind = dict(bar.trials_per_task)
    for name, kind in kinds.items():
        per_kind.setdefault(name, kind.trials_per_task)
    if override is not None:
        per_kind = {name: override for name in per_kind}
    return attrs.evolve(bar, trials_per_task=per_kind)


def _check_seats(plugins: Plugins, seats: Sequence[str], seats_from: str = "--model-grader") -> None:
    """Every model Grader seat is HARNESS:MODEL naming a known Harness, or nothing is recorded
    (whether a Grader sitting there can run here is that Grader's to say: ``SeatedGrader``)."""
    harnesses = plugins.harnesses()
    for seat in seats:
        harness, _, model = seat.partition(":")
        if not harness.strip() or not model.strip():
            missing = "model" if harness.strip() else "Harness"
            raise PlanError(f"{seats_from} '{seat}': a model Grader seat is HARNESS:MODEL (the {missing} is missing)")
        if harness not in harnesses:
            raise PlanError(f"{seats_from} '{seat}': no Harness '{harness}' is installed "
                            f"(known: {', '.join(sorted(harnesses)) or 'none'})")


def _panel_can_sit(plugins: Plugins, bar: Bar, backend: SandboxBackend, unsandboxed: bool,
                   arms: Sequence[ArmSetup], config: GradingConfig) -> None:
    """Refuse a Grader panel that could never sit: a seat's Harness unknown or not installed, a session
    unsandboxed without consent, or fewer voting families than ``--panel-families``."""
    harnesses = plugins.harnesses()
    for seat in bar.panel_seats:
        if seat.harness not in harnesses:
            raise PlanError(f"--panel-seat {seat.key}: no Harness '{seat.harness}' is installed "
                            f"(known: {', '.join(sorted(harnesses)) or 'none'})")
        try:
            harnesses[seat.harness].locate()
        except Exception as e:  # locate() raises whatever its Harness raises when the CLI is missing
            raise PlanError(f"--panel-seat {seat.key}: the Harness '{seat.harness}' can't be used here ({e})") from None
    if backend.name == "none" and not unsandboxed:
        raise PlanError("--sandbox none: the Grader panel's sessions would run unsandboxed, able to read your "
                        "credentials and every file of yours; pass --unsandboxed-grader to allow it")
    taken = [arm_family(a.harness, a.model, config.families) for a in arms]
    voting = voting_families([family_of(s.model, config.families) for s in bar.panel_seats], taken,
                             bar.panel_arm_family_rule)
    if len(voting) < bar.panel_families:
        raise PlanError(f"--panel-families {bar.panel_families}: only {len(voting)} model famil"
                        f"{'y' if len(voting) == 1 else 'ies'} would vote ({', '.join(sorted(voting))}); "
                        f"seat Models from more families neither Arm runs on")


def _grading_config(home: AssayHome) -> GradingConfig:
    try:
        return grading_config(home.root)
    except UserConfigError as e:
        raise PlanError(str(e)) from None


def _grader_family(seats: Sequence[str], arms: Sequence[ArmSetup], config: GradingConfig, seats_from: str) -> str | None:
    """The Arms' family the model Grader will share, when no seat from a third family is configured
    (the Bar records it; the Verdict and the Console say it); refused now when every seat is an
    Arm's own Model, which would grade itself."""
    taken = [arm_family(a.harness, a.model, config.families) for a in arms]
    usable, shared = grader_seats(seats, taken, [a.model for a in arms], config.families)
    if seats and not usable:
        named = ", ".join(f"{s} ({family_of(seat_model(s), config.families)})" for s in seats)
        raise PlanError(f"{seats_from}: every seat is an Arm's own Model ({named}); no Model grades itself: "
                        f"seat another Model, best from a family neither Arm runs on (docs/grading.md, 'The family rule')")
    return shared


def _backend(plugins: Plugins, name: str | None, fallback: bool) -> SandboxBackend:
    """The named backend, else bwrap; without bwrap only ``--sandbox none`` (or the demo) runs bare."""
    if name:
        backend = plugins.get("assay_sandbox_backends", name)
        check = backend.check()
        if not check.works:
            raise PlanError(f"sandbox backend '{name}' can't run here: {check.reason}")
        return backend
    backends = plugins.sandbox_backends()
    bwrap = backends.get("bwrap")
    check = bwrap.check() if bwrap else None
    if bwrap and check and check.works:
        return bwrap
    reason = check.reason if check else "no bwrap sandbox backend is installed"
    if fallback and "none" in backends:
        return backends["none"]
    raise PlanError(f"bwrap can't run here ({reason}); pass --sandbox none to run Trials without a sandbox")


def labelled(plan: Plan, label: str) -> Plan:
    """The plan of the Experiment started afresh beside the one its Arms and suites name: ``label``
    is part of its identity (``--label``), so the same command with the same label resumes it."""
    if not label.strip() or any(c in label for c in "/\\") or not label.isprintable():
        raise PlanError(f"--label {label!r}: expected a short name (no slash, no control character)")
    setup = plan.setup
    return attrs.evolve(plan, setup=attrs.evolve(
        setup, label=label, id=experiment_id(setup.baseline, setup.candidate, setup.suites, label)))


def free_label(home: AssayHome, plan: Plan) -> str:
    """The first of "2", "3", … that names no Experiment yet beside this plan's (``--new``)."""
    n = 2
    while (home.experiments / labelled(plan, str(n)).id).exists():
        n += 1
    return str(n)


def record(exp: ExperimentDir, plan: Plan) -> Setup:
    """Write the Setup and the Bar before the first Trial; after it, refuse a changed Bar or task list.

    Once a Trial has started, the recorded Setup stands — with the Harness binaries resolved when
    the Experiment started, so every Trial runs on those even if a Harness updated itself since.
    """
    if not exp.any_trial_started():
        formats.write(exp.setup_file, plan.setup)
        formats.write(exp.bar_file, plan.bar)
        return plan.setup
    recorded = exp.setup()  # with every look's added tasks, which the plan of the first look lacks
    differences = bar_differences(exp.bar(), plan.bar)
    if differences:
        raise Refused(
            f"Experiment {plan.id}: the Bar was recorded before its first Trial and can't change "
            f"({'; '.join(differences)})"
        )
    planned = {t.id for t in plan.setup.tasks}
    added = tuple(t for look in exp.looks()[1:] for t in look.added if t.id not in planned)
    changed = task_changes(recorded.tasks, (*plan.setup.tasks, *added))
    if changed:
        raise Refused(
            f"Experiment {plan.id}: its Eval tasks changed since its first Trial ({'; '.join(changed)})"
        )
    if recorded.sandbox != plan.setup.sandbox:
        raise PlanError(
            f"Experiment {plan.id}: its Trials ran in the '{recorded.sandbox}' sandbox; resume it with "
            f"--sandbox {recorded.sandbox} so every Trial of one Verdict runs alike"
        )
    return recorded


def task_changes(recorded: Sequence[TaskSetup], now: Sequence[TaskSetup]) -> list[str]:
    """What differs between the tasks a Setup recorded and the tasks as they are now; a field a
    Setup recorded before format 3 (None) is not compared."""
    before, after = {t.id: t for t in recorded}, {t.id: t for t in now}
    changes = [f"{task} added" for task in after if task not in before]
    changes += [f"{task} removed" for task in before if task not in after]
    for task in before.keys() & after.keys():
        old, new = attrs.asdict(before[task]), attrs.asdict(after[task])
        for field in (f for f in old if old[f] is not None and old[f] != new[f]):
            changes.append(f"{task}: its task.toml or input files changed" if field == "inputs_digest"
                           else f"{task}: {field} was {old[field]}, now {new[field]}")
    return sorted(changes)


def arms_summary(setup: Setup) -> dict[str, ArmSetup]:
    return {arm: setup.arm(arm) for arm in ARMS}


def executor_options(home: AssayHome, name: str | None, address: str | None) -> ExecutorOptions:
    """Where Trials run: ``--executor`` and its address, else the User config's ``[executor]``, else here."""
    try:
        config = executor_config(home.root)
    except UserConfigError as e:
        raise PlanError(str(e)) from None
    chosen = name or config.name or LOCAL_EXECUTOR
    if address or chosen != config.name or not config.address:
        return ExecutorOptions(chosen, address)
    return ExecutorOptions(chosen, config.address, f"{home.root / CONFIG}: executor.address")


def choose_executor(plugins: Plugins, plan: Plan, options: ExecutorOptions) -> Executor:
    """The executor ``options`` names, refused with why if it can't run here or can't run this plan."""
    try:
        executor: Executor = plugins.get("assay_executors", options.name)
    except PluginError as e:
        raise PlanError(f"--executor: {e}") from None
    if not executor.remote:
        if options.address:
            raise PlanError(f"--ray-address: the '{options.name}' executor runs Trials here and takes no address")
        return executor
    check = executor.check()
    if not check.works:
        raise PlanError(f"--executor {options.name} can't run here: {check.reason}")
    if plan.scripts or plan.grader_script:
        raise PlanError(f"--executor {options.name}: a scripted Experiment's providers run in this process; "
                        "run it on the local executor")
    kinds = plugins.suite_kinds()
    for task in plan.tasks.values():
        if kinds[task.kind].needs_origin:
            raise PlanError(f"--executor {options.name}: {task.id} is a {task.kind} task, whose Trials push to a "
                            "local origin; remote hosts don't run such tasks so far")
    try:
        executor.reach(options)  # before anything of the Experiment is written
    except ExecutorUnreachable as e:
        raise PlanError(str(e)) from None
    return executor


def start(home: AssayHome, plugins: Plugins, plan: Plan, *, workers: int, report,
          executor: ExecutorOptions | None = None) -> tuple[ExperimentDir, str]:
    """Run (or resume) the Experiment on ``executor`` (default: here); returns its folder and outcome."""
    from assay.engine.runner import ExperimentRun
    from assay.sessions.slots import workers_refusal

    options = executor or ExecutorOptions()
    chosen = choose_executor(plugins, plan, options)
    if not chosen.remote and (why := workers_refusal(workers, arms_summary(plan.setup).values(), plugins.harnesses())):
        raise PlanError(why)
    try:
        preflight.probe_arms(plan.sources, arms_summary(plan.setup), plan.backend, home.root)
    except preflight.ArmCannotStart as e:
        raise PlanError(str(e)) from None
    exp = ExperimentDir(home.experiments / plan.id)
    private_folder(home.experiments)
    private_folder(exp.path)
    try:
        with exclusive_lock(exp.lock_file), contextlib.ExitStack() as scripted, _stop_as_ctrl_c():
            setup = record(exp, plan)
            finished = _finished(exp)
            if finished is not None:
                return exp, finished
            if {t.id for t in setup.tasks} - set(plan.tasks):  # an extended Experiment resumed by its first command
                plan = attrs.evolve(plan, tasks=eval_tasks(home, plugins, setup))
            command = Command.start(home, "experiment", plan.id, lock=exp.lock_file, arms=arms_summary(setup),
                                    bar=plan.bar, release=setup.release)
            run: ExperimentRun | None = None
            try:
                with command.stage("arms"):
                    runtimes = {arm: _runtime(home, plan, setup.arm(arm), arm, command) for arm in ARMS}
                    if plan.scripts:
                        runtimes = scripted.enter_context(_scripted(plan, runtimes, exp, command))
                    graders, grading_backend = scripted.enter_context(_scripted_graders(plugins, plan, exp, command))
                prompts = {arm: _prompts(plugins, plan, runtimes[arm]) for arm in ARMS}
                run = ExperimentRun(
                    home=home, plugins=plugins, exp=exp, setup=setup, bar=plan.bar, tasks=plan.tasks,
                    prompts=prompts, runtimes=runtimes, backend=plan.backend, workers=workers,
                    command=command, report=report, grader_harnesses=graders, grading_backend=grading_backend,
                )
                outcome = interrupts.run_trio(_run_on, run, chosen, options, plan)
            except Exception as e:
                cause = _root_cause(e)
                with contextlib.suppress(OSError):  # a full disk must not hide the error behind its own
                    command.log("".join(traceback.format_exception(e)))
                with contextlib.suppress(OSError):  # unwritten, the record reads "interrupted" (its lock is free)
                    command.finish("errored", "errored", f"{type(cause).__name__}: {cause}")
                raise ExperimentErrored(f"Experiment {plan.id} errored: {cause} (see {command.log_path})") from e
            except BaseException as e:
                if not _interrupted(e):
                    raise
                command.log("Stop received before the run could take it: cutting work short")
                outcome = "stopped"
            state = {"paused": "paused", "stopped": "stopped"}.get(outcome, "done")
            waiting = results.waiting_text(formats.read(exp.verdict_file, results.ExperimentVerdict), exp.id) \
                if state == "done" else ""
            command.finish(state, outcome, _summary(exp, outcome, run.pauses if run else {}), waiting)
            return exp, outcome
    except Locked:
        raise AlreadyRunning(f"Experiment {plan.id} is already running in another process") from None
    except NotALockFile as e:
        raise PlanError(str(e)) from None
    except OSError as e:  # a full disk or an unwritable ASSAY_HOME, outside the run itself
        raise ExperimentErrored(f"Experiment {plan.id} errored: {e}") from e


async def _run_on(run: ExperimentRun, executor: Executor, options: ExecutorOptions, plan: Plan) -> str:
    """The run on its executor: here, or on a remote executor's hosts, as many Trials at once as
    they hold slots of the Arms' logins."""
    if not executor.remote:
        return await run.run()
    import tempfile

    from assay.engine.remote import RemoteTrials
    from assay.sessions.grader_session import sessions_on
    from assay.sessions.slots import arm_login

    arms = arms_summary(run.setup)
    logins = {arm_login(a, run.plugins.harnesses()) for a in arms.values()}
    with tempfile.TemporaryDirectory(prefix="assay-remote-") as scratch:
        async with executor.open(options, run.command.log) as workers:
            slots: dict[str, int] = {}  # each place once: two runner Arms share the hosts' runner places
            for login in sorted(logins):
                places = workers.places(login)
                slots.update(places)
                run.command.log(f"executor {executor.name}: the {login} login has {len(places)} place(s): "
                                f"{', '.join(f'{p} ({n} at once)' for p, n in places.items()) or 'none'}")
            run.workers = max(1, sum(slots.values()))
            run.queued = run.workers  # one waits on each slot: it starts as the one before is written here
            builds = {arm: Path(a.build) if a.runner and a.build else getattr(run.runtimes[arm], "build", None)
                      for arm, a in arms.items()}
            for arm, a in arms.items():  # a runner's copy here is what travels: hosts check theirs against its digest
                if a.runner and (why := plan.sources[arm].check_copy(a, builds[arm])):  # type: ignore[union-attr]
                    raise CannotGoOn(f"the {arm.title()}'s frozen runner here: {why}")
            run.remote = RemoteTrials(workers, run.backend, arms, builds, run.bar, run.command.log, Path(scratch),
                                      run.pause_place)
            with sessions_on(run.remote.grader_session):  # model Graders' sessions where their login is
                return await run.run()


def _finished(exp: ExperimentDir) -> str | None:
    """The Verdict of a finished Experiment; None while anything is left to run or grade
    (a Score left pending by a Grader is graded again on the next run)."""
    if not exp.verdict_file.exists():
        return None
    done = formats.read(exp.verdict_file, results.ExperimentVerdict)
    return None if done.pending or done.panel_missing or done.look < len(exp.looks()) else results.outcome(done)


def eval_tasks(home: AssayHome, plugins: Plugins, setup: Setup) -> dict[str, EvalTask]:
    """The Setup's Eval tasks as their manifests read now (what changed since is refused by :func:`record`)."""
    wanted = {t.id for t in setup.tasks}
    try:
        loaded = [manifests.load_suite(home, name, plugins.suite_kinds()) for name in setup.suites]
    except ManifestError as e:
        raise PlanError(str(e)) from None
    tasks = {t.id: t for suite in loaded for t in suite.tasks if t.id in wanted}
    missing = sorted(wanted - set(tasks))
    if missing:
        raise PlanError(f"Experiment {setup.id}: its Eval task {missing[0]} is no longer in its suite")
    return tasks


def recorded_plan(home: AssayHome, plugins: Plugins, exp: ExperimentDir) -> Plan:
    """The Plan of an Experiment as it was recorded (Arms, Bar, tasks with every look's, sandbox),
    for running it by its id: the flags that started it are not needed again."""
    setup, bar = exp.setup(), exp.bar()
    if any(setup.arm(arm).scripted_provider for arm in ARMS):
        raise PlanError(f"Experiment {setup.id} is scripted: run it by the command that started it, "
                        "with its --scripted-provider scripts")
    tasks = eval_tasks(home, plugins, setup)
    try:
        loaded = [manifests.load_suite(home, name, plugins.suite_kinds()) for name in setup.suites]
        sources = {arm: _source(plugins, setup.arm(arm), loaded) for arm in ARMS}
        _logins_present(home, sources, (setup.baseline, setup.candidate))
        factory = Factory.open(Path(setup.factory)) if setup.factory else None
    except (ArmError, FactoryError, ManifestError, PluginError) as e:
        raise PlanError(str(e)) from None
    return Plan(setup, bar, tasks, sources, _backend(plugins, setup.sandbox, False), factory)


def _runtime(home: AssayHome, plan: Plan, setup: ArmSetup, arm: Arm, command: Command) -> ArmRuntime:
    """The Arm's session runner, with its Factory commit materialised (once, cached by commit)."""
    source = plan.sources[arm]
    if setup.runner:
        command.log(f"{arm.title()}: runner {setup.runner} frozen at {setup.build}")
        return source.runtime(setup, assay_home=home.root)  # type: ignore[union-attr]
    build = plan.factory.materialise(home, setup.commit) if plan.factory and setup.commit else None
    command.log(f"{arm.title()}: Factory {(setup.commit or '')[:10]} materialised at {build}")
    return HarnessArm(source, setup, build)  # type: ignore[arg-type]


def _scripted(plan: Plan, runtimes: dict[Arm, ArmRuntime], exp: ExperimentDir,
              command: Command) -> contextlib.AbstractContextManager[dict[Arm, ArmRuntime]]:
    """Both Arms' sessions routed to scripted providers, for as long as the Experiment runs."""
    from assay.scripted_provider.experiment import scripted_runtimes

    logs = exp.path / "scripted-provider"
    command.log(f"Scripted Experiment: both Arms talk to scripted providers, not models (requests in {logs})")
    return scripted_runtimes(runtimes, plan.scripts, plan.backend, logs)


def _scripted_graders(plugins: Plugins, plan: Plan, exp: ExperimentDir, command: Command,
                      ) -> contextlib.AbstractContextManager[tuple[Mapping[str, Harness], SandboxBackend]]:
    """The Harnesses and backend Grader sessions run with: routed to a provider playing the
    Experiment's grader script where it has one, else the installed ones on the Experiment's backend."""
    if plan.grader_script is None:
        return contextlib.nullcontext((plugins.harnesses(), plan.backend))
    from assay.scripted_provider.experiment import scripted_graders

    logs = exp.path / "scripted-provider"
    command.log(f"Scripted Experiment: its Grader sessions talk to scripted providers too (requests in {logs})")
    return scripted_graders(plugins.harnesses(), _seated(plan.bar), plan.grader_script, plan.backend, logs)


def _prompts(plugins: Plugins, plan: Plan, runtime: ArmRuntime) -> dict[str, str]:
    """Each task's Session prompt for one Arm: its Factory build may override the prompt file."""
    kinds = plugins.suite_kinds()
    build = getattr(runtime, "build", None)
    return {t.id: kinds[t.kind].session_prompt(t, build) for t in plan.tasks.values()}


def _summary(exp: ExperimentDir, outcome: str, pauses: Mapping[str, str]) -> str:
    """The Command record's summary (the Inbox's, the Console's, the CLI's last line): a pause at a
    plan limit names each login (a remote place) paused and why."""
    if outcome in ("paused", "stopped"):
        at = "; ".join(f"{login} ({why})" for login, why in pauses.items())
        return f"{outcome}{f' at a plan limit of {at}' if outcome == 'paused' and at else ''}; run the same command again to resume"
    return results.summary(formats.read(exp.verdict_file, results.ExperimentVerdict))


def prepare_arms(home: AssayHome, plan: Plan) -> dict[str, dict]:
    """Materialise each Factory Arm (Custom runners were frozen by :func:`plan`); what each Arm is."""
    out = {}
    for arm in ARMS:
        setup = plan.setup.arm(arm)
        build = setup.build
        if not setup.runner and plan.factory and setup.commit:
            build = str(plan.factory.materialise(home, setup.commit))
        out[arm] = {**formats.unstructure(setup), "build": build}
        if setup.runner and build:
            out[arm]["frozen"] = json.loads((Path(build) / "frozen.json").read_text())
    return out

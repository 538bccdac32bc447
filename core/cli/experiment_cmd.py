"""``assay experiment``, ``assay experiments``, ``assay stop`` and ``assay inbox``.

Exit codes of ``assay experiment`` (docs/experiments.md): 0 the Experiment ended with a final
Verdict (read it: pass, fail or inconclusive); 1 it errored; 2 bad input, refused before any Trial;
3 paused (plan limit) or stopped — run the same command again to resume; 5 it ended with a
provisional Verdict that waits on something (a recheck, people's reviews, pending Scores): it says what.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from assay.cli.experiment_records import command_record, find_experiment, shared_family_note, show_verdict
from assay.cli.output import JsonOpt, emit_json, emit_json_line, fail, say, table
from assay.storage.home import AssayHome

if TYPE_CHECKING:  # the records, the engine and the plugins load in the commands that use them (`--help` needs none)
    from assay.hooks import plugin_manager as plugin_loading  # loaded on first use (cli.PluginsOnUse)
    from assay.storage.records import Bar

EXIT_PAUSED = 3
EXIT_NOT_FINAL = 5


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    app.command("experiment")(_experiment_command(plugins))
    app.add_typer(_evals_app(plugins), name="evals")
    app.command("experiments")(experiments)
    app.command("stop")(stop)
    app.command("inbox")(inbox)
    app.command("recheck")(_recheck_command(plugins))


# The flag a user types for each Bar part, so a refusal names it (not ``bar.timeout_seconds``).
BAR_FLAGS = {"timeout_seconds": "--timeout", "void_backoff_seconds": "--void-backoff", "model_graders": "--model-grader",
             "panel_seats": "--panel-seat", "people_readers": "--people-reader"}


def flag_message(text: str) -> str:
    """``text`` with each ``bar.PART`` named by its flag (``--margin``, ``--timeout``)."""
    return re.sub(r"\bbar\.(\w+)", lambda m: BAR_FLAGS.get(m[1], "--" + m[1].replace("_", "-")), text)


def _bar(**overrides: Any) -> Bar:
    from assay.storage.records import Bar

    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Bar(**given)
    except (ValueError, TypeError) as e:
        fail(flag_message(str(e)))


Candidate = Annotated[Optional[str], typer.Argument(help="The Candidate: a branch or commit of the Factory (omit with --candidate-runner; with --release, the commit being released, default HEAD).")]
BaselineRef = Annotated[Optional[str], typer.Option("--baseline", help="The Baseline commit (default: where the Candidate's branch left main).")]
Suites = Annotated[list[str], typer.Option("--suite", help="An Eval suite to run (repeatable).")]
FactoryOpt = Annotated[Path, typer.Option("--factory", help="The Factory repository (default: here).")]


def _arm_option(arm: str, what: str, help: str) -> Any:
    return Annotated[Optional[str], typer.Option(f"--{arm}-{what}", help=help.format(arm=arm.title()))]


BaselineHarness = _arm_option("baseline", "harness", "Harness for the {arm} (default: the Factory's).")
BaselineModel = _arm_option("baseline", "model", "Model for the {arm}.")
BaselineEffort = _arm_option("baseline", "effort", "Effort for the {arm}.")
BaselineRunner = _arm_option("baseline", "runner", "A Custom runner for the {arm}: a name or a .toml manifest.")
CandidateHarness = _arm_option("candidate", "harness", "Harness for the {arm} (default: the Factory's).")
CandidateModel = _arm_option("candidate", "model", "Model for the {arm}.")
CandidateEffort = _arm_option("candidate", "effort", "Effort for the {arm}.")
CandidateRunner = _arm_option("candidate", "runner", "A Custom runner for the {arm}: a name or a .toml manifest.")


def make_plan(plugins: plugin_loading.Plugins, home: AssayHome, bar: Bar, trials_per_task: int | None,
              sandbox: str | None, factory: Path, suites: list[str], arms: tuple[Any, Any],
              sandbox_fallback: bool = False, scripts: dict[str, Path] | None = None,
              unsandboxed_grader: bool = False, release: bool = False) -> Any:
    """The checked plan for ``arms`` (the Candidate's and the Baseline's ``ArmFlags``), or a
    one-line error (exit 2); a change that touches no suite says so and exits 0. With ``release``,
    the Candidate's ref (default HEAD) is the commit being released and the Baseline is the last
    release's tag (docs/release.md)."""
    from assay.engine import start as experiments_core

    candidate, baseline = arms
    options = dict(bar=bar, trials_per_task=trials_per_task, sandbox=sandbox, sandbox_fallback=sandbox_fallback,
                   scripts=scripts, unsandboxed_grader=unsandboxed_grader)
    try:
        if release:
            from assay.engine.release import plan_release

            return plan_release(home, plugins, factory_path=factory.absolute(), ref=candidate.ref or "HEAD",
                                candidate=candidate, baseline=baseline, **options)
        return experiments_core.plan(home, plugins, factory_path=factory.absolute(), suites=suites,
                                     candidate=candidate, baseline=baseline, **options)
    except experiments_core.PlanError as e:
        fail(str(e))
    except experiments_core.NothingTouched as e:
        say("\n".join(e.lines))
        raise typer.Exit(0) from None


def _experiment_command(plugins: plugin_loading.Plugins):
    def experiment(
        candidate: Candidate = None,
        baseline: BaselineRef = None,
        suite: Suites = [],
        factory: FactoryOpt = Path("."),
        baseline_harness: BaselineHarness = None,
        baseline_model: BaselineModel = None,
        baseline_effort: BaselineEffort = None,
        baseline_runner: BaselineRunner = None,
        candidate_harness: CandidateHarness = None,
        candidate_model: CandidateModel = None,
        candidate_effort: CandidateEffort = None,
        candidate_runner: CandidateRunner = None,
        release: bool = typer.Option(
            False, "--release",
            help="Release mode: the Candidate is the commit being released (default HEAD), the Baseline the last "
                 "release's tag ([release] tag_pattern in the User config, default v*), the suites those the "
                 "changes since that tag touch (docs/release.md)."),
        margin: float = typer.Option(None, help="Bar: how much worse the Candidate may be and still pass (default 0.10)."),
        level: float = typer.Option(None, help="Bar: credible level of the interval (default 0.95)."),
        seed: int = typer.Option(None, help="Bar: seed of the Verdict's draws."),
        draws: int = typer.Option(None, help="Bar: number of posterior draws (default 20000)."),
        prior_weight: float = typer.Option(None, help="Bar: the prior, in pseudo Eval tasks (default 1)."),
        trials_per_task: int = typer.Option(None, help="Bar: Trials per Arm per Eval task (default by suite kind: 3, or 1 for spec-review)."),
        timeout: float = typer.Option(None, help="Bar: per-Trial timeout in seconds (a timeout is a fail)."),
        void_backoff: float = typer.Option(None, help="Bar: seconds before re-running a Trial the provider failed; doubles each time (default 30)."),
        efficiency: str = typer.Option(None, "--efficiency", metavar="time|tokens|cost", help="Bar: the change is meant to save this; the Verdict then also judges the saving, paired per task, beside the pass share (docs/verdict.md, \"Efficiency\")."),
        efficiency_margin: float = typer.Option(None, "--efficiency-margin", help="Bar: with --efficiency, the share it is meant to save (default 0.10)."),
        usage_warning: float = typer.Option(None, "--usage-warning", help="Bar: the share of a plan window used (Codex's rate-limit reports) at which no new Trial starts and the Experiment pauses, as at Claude's warning (default 0.9)."),
        model_grader: list[str] = typer.Option([], "--model-grader", help="Bar: a model Grader seat HARNESS:MODEL (repeatable; the first from neither Arm's family grades)."),
        look_rule: str = typer.Option(None, "--look-rule", help="Bar: how looks are judged: confidence-sequence (default; --add-tasks may extend an inconclusive Experiment, later looks judged by an interval valid at every look), confidence-sequence-only (that interval at the first look too, so false passes stay within the level whatever the looks) or one-look (no extension)."),
        add_tasks: list[str] = typer.Option(
            [], "--add-tasks", metavar="SUITE/TASK[,…]",
            help="Extend the inconclusive Experiment named in place of the Candidate with these Eval tasks "
                 "(repeatable or comma-separated): a new look, judged so that looking again can't pass by luck "
                 "(docs/verdict.md). The same command again resumes it."),
        panel: str = typer.Option(None, "--panel", metavar="off|beside|counted", help="Bar: whether the Grader panel's calls on pairs of process Trials count in the Verdict (default: beside when seats are given)."),
        panel_seat: list[str] = typer.Option([], "--panel-seat", metavar="harness=H,model=M[,effort=E]", help="Bar: a Grader panel seat (repeatable)."),
        panel_vote: str = typer.Option(None, "--panel-vote", metavar="family|model", help="Bar: one ballot per model family (default) or per Model."),
        panel_arm_family_rule: str = typer.Option(None, "--panel-arm-family-rule", metavar="on|off", help="Bar: seats of an Arm's family sit out while another family votes (default on)."),
        panel_families: int = typer.Option(None, "--panel-families", help="Bar: the fewest model families that must vote on each pair, checked before the first Trial (default 1)."),
        panel_spending_limit: float = typer.Option(None, "--panel-spending-limit", help="Bar: USD the Grader panel may spend per run; grading pauses once it is reached (resume to go on)."),
        panel_agreement: float = typer.Option(None, "--panel-agreement", help="Bar: with people and panel both counted, their agreement below this makes the Verdict inconclusive."),
        people: str = typer.Option(None, "--people", metavar="off|beside|counted", help="Bar: whether people's blind reviews of pairs count in the Verdict (default: beside when readers are named)."),
        people_reader: list[str] = typer.Option([], "--people-reader", help="Bar: a reader of pairs (repeatable)."),
        people_sample: float = typer.Option(None, "--people-sample", help="Bar: the share of pairs given to readers, drawn from the seed (default 1)."),
        people_overlap: int = typer.Option(None, "--people-overlap", help="Bar: readers per sampled pair (default 0: every reader)."),
        label: str = typer.Option(
            None, "--label", metavar="NAME",
            help="Start (or, the same command again, resume) an Experiment of its own beside the one these Arms "
                 "and suites name: after a changed Bar or an edited Eval task. Listed with its label."),
        new: bool = typer.Option(False, "--new", help="Start afresh beside it under the next free label (2, 3, …)."),
        yes: bool = typer.Option(False, "--yes", "-y", help="Start without asking (on a terminal it asks after the estimate)."),
        workers: int = typer.Option(2, min=1, help="Sessions running at once, Grader sessions included: at most 2 per login (two Arms on different logins: 4)."),
        sandbox: str = typer.Option(None, help="Sandbox backend (default: bwrap where it works, else none)."),
        executor: str = typer.Option(None, "--executor", metavar="local|ray", help="Where Trials run: local (this process, default) or ray (a Ray cluster's hosts, `pip install 'assay[ray]'`; docs/distributed.md). Default: the User config's [executor] name."),
        ray_address: str = typer.Option(None, "--ray-address", metavar="HOST:PORT", help="The Ray cluster's head (default: the User config's [executor] address, else RAY_ADDRESS)."),
        unsandboxed_grader: bool = typer.Option(
            False, "--unsandboxed-grader",
            help="Let model Graders run under --sandbox none, where their session can read your credentials "
                 "and every file of yours (docs/grading.md)."),
        scripted_provider: list[str] = typer.Option(
            [], "--scripted-provider", metavar="[ARM=]SCRIPT",
            help="For testing: every Trial's model is a scripted provider playing SCRIPT (both Arms, or "
                 "baseline=/candidate= each; grader= for every model Grader and panel seat session); recorded "
                 "in the Arms and the Bar, so the result is never taken for a real one (docs/scripted-provider.md)."),
        json_: bool = JsonOpt,
    ) -> None:
        """Compare the Baseline and the Candidate on Eval suites and give a Verdict against the Bar.

        Running the same command again resumes the Experiment: finished Trials are kept, Trials
        cut short run again, and a finished Experiment just reports its Verdict.
        """
        if release:
            refuse_outside_release(baseline=baseline, suite=suite, baseline_runner=baseline_runner,
                                   candidate_runner=candidate_runner)
        home = AssayHome.from_env()
        given = dict(margin=margin, level=level, seed=seed, draws=draws, prior_weight=prior_weight,
                     timeout_seconds=timeout, void_backoff_seconds=void_backoff, usage_warning=usage_warning,
                     efficiency=efficiency, efficiency_margin=efficiency_margin,
                     model_graders=tuple(model_grader) or None, look_rule=look_rule,
                     panel_spending_limit=panel_spending_limit, panel_agreement=panel_agreement,
                     people=people or ("beside" if people_reader else None), people_readers=tuple(people_reader) or None,
                     people_sample=people_sample, people_overlap=people_overlap,
                     **_panel_flags(panel, panel_seat, panel_vote, panel_arm_family_rule, panel_families))
        where = _executor(home, executor, ray_address)
        if add_tasks:
            _extend(plugins, home, candidate, add_tasks, given, workers=workers, json_=json_, executor=where)
            return
        if new and label:
            fail("--new starts afresh under the next free label; --label names one: give one of them")
        bar = _bar(**given)
        plan = make_plan(plugins, home, bar, trials_per_task, sandbox, factory, suite, arm_flags(locals()),
                         scripts=_arm_scripts(scripted_provider), unsandboxed_grader=unsandboxed_grader,
                         release=release)
        if new or label:
            from assay.engine import start as experiments_core

            try:
                plan = experiments_core.labelled(plan, label or experiments_core.free_label(home, plan))
            except experiments_core.PlanError as e:
                fail(str(e))
        run_plan(home, plugins, plan, workers=workers, json_=json_, confirm=not yes, fresh=True, executor=where)

    return experiment


def _executor(home: AssayHome, name: str | None, address: str | None) -> Any:
    """``--executor``/``--ray-address`` with the User config's ``[executor]`` (one line and exit 2 if bad)."""
    from assay.engine import start as experiments_core

    try:
        return experiments_core.executor_options(home, name, address)
    except experiments_core.PlanError as e:
        fail(str(e))


def arm_flags(given: dict[str, Any]) -> tuple[Any, Any]:
    """The Candidate's and the Baseline's ``ArmFlags`` from a command's per-Arm options."""
    from assay.engine.arms import ArmFlags

    return tuple(ArmFlags(given[arm], given[f"{arm}_harness"], given[f"{arm}_model"], given[f"{arm}_effort"],
                          given[f"{arm}_runner"]) for arm in ("candidate", "baseline"))  # type: ignore[return-value]


def refuse_outside_release(**given: Any) -> None:
    """Release mode fixes the Baseline (the last release) and the suites (the change's): refuse
    the flags that would set them otherwise."""
    for name, value in given.items():
        if value:
            fail(f"--{name.replace('_', '-')} can't be used in release mode: the Baseline is the last release's tag "
                 f"and the suites are those the changes since it touch")


def _extend(plugins: plugin_loading.Plugins, home: AssayHome, ref: str | None, add_tasks: list[str],
            given: dict[str, Any], *, workers: int, json_: bool, executor: Any = None) -> None:
    """``assay experiment ID --add-tasks …``: record the new look, then run it (docs/verdict.md)."""
    import attrs
    from assay.engine import extend
    from assay.engine import start as experiments_core
    from assay.engine.folder import bar_differences

    if not ref:
        fail("--add-tasks extends an Experiment: name it, `assay experiment ID --add-tasks SUITE/TASK`")
    exp = find_experiment(home, ref)
    recorded = exp.bar()
    try:
        wanted = attrs.evolve(recorded, **{k: v for k, v in given.items() if v is not None})
    except (ValueError, TypeError) as e:
        fail(flag_message(str(e)))
    changed = bar_differences(recorded, wanted)
    if changed:
        fail(f"Experiment {exp.id}: the Bar was recorded before its first Trial and can't change ({'; '.join(changed)})")
    tasks = [t.strip() for value in add_tasks for t in value.split(",") if t.strip()]
    try:
        look = extend.add_look(home, plugins, exp, tasks)
        plan = experiments_core.recorded_plan(home, plugins, exp)
    except experiments_core.PlanError as e:
        fail(str(e))
    if not json_ and look is None:
        say(f"Resuming look {len(exp.looks())} of Experiment {exp.id}.")
    elif not json_:
        say(f"Look {look.number}: {_plural(len(tasks), 'Eval task')} added to Experiment {exp.id} "
            f"({look.tasks} in all); the Trials already run are kept.")
    for warning in look.warnings if look is not None else ():
        say(f"Warning: {warning.text}.", err=True)
    run_plan(home, plugins, plan, workers=workers, json_=json_, executor=executor)


def _panel_flags(mode: str | None, seats: list[str], vote: str | None, arm_family_rule: str | None,
                 families: int | None) -> dict[str, Any]:
    """The Bar's panel fields from the flags (None where a flag is absent: the Bar's default)."""
    from assay.storage.records import PanelSeat

    if arm_family_rule not in (None, "on", "off"):
        fail(f"--panel-arm-family-rule must be on or off, got {arm_family_rule!r}")
    try:
        parsed = tuple(PanelSeat.parse(s) for s in seats)
    except ValueError as e:
        fail(str(e))
    return {"panel": mode or ("beside" if parsed else None), "panel_seats": parsed or None, "panel_vote": vote,
            "panel_arm_family_rule": None if arm_family_rule is None else arm_family_rule == "on",
            "panel_families": families}


def _arm_scripts(values: list[str]) -> dict[str, Path]:
    """``SCRIPT`` (both Arms), ``ARM=SCRIPT`` or ``grader=SCRIPT`` values as a script per Arm (and
    one for every Grader session)."""
    from assay.storage.records import ARMS, GRADERS

    scripts: dict[str, Path] = {}
    for value in values:
        arm, named, path = value.partition("=")
        arms, path = ((arm,), path) if named and arm in (*ARMS, GRADERS) else (ARMS, value)
        for name in arms:
            if name in scripts:
                fail(f"--scripted-provider: the {name.title()} already has a script ({scripts[name]})")
            scripts[name] = Path(path).absolute()
    return scripts


def run_plan(home: AssayHome, plugins: plugin_loading.Plugins, plan: Any, *, workers: int, json_: bool,
             confirm: bool = False, fresh: bool = False, executor: Any = None) -> None:
    """Announce, run with live progress, and print the result (shared with ``assay demo``, which
    never asks). ``confirm``: on a terminal, ask before the first Trial; ``fresh``: a refused
    changed Bar or task list names the command that starts afresh (``--label``)."""
    exp, outcome = execute(home, plugins, plan, workers=workers, json_=json_, confirm=confirm, fresh=fresh,
                           executor=executor)
    _conclude(exp, outcome, json_)


def execute(home: AssayHome, plugins: plugin_loading.Plugins, plan: Any, *, workers: int,
            json_: bool, raise_if_running: bool = False, confirm: bool = False, fresh: bool = False,
            executor: Any = None) -> tuple[Any, str]:
    """Announce and run (or resume) the Experiment with live progress; its folder and outcome.
    Bad input exits 2, a broken run 1 (shared with ``assay release-check``, which asks for
    :class:`~assay.engine.start.AlreadyRunning` to be raised, not refused, so it can wait)."""
    from assay.cli.progress import reporter
    from assay.engine import start as experiments_core
    from assay.engine.folder import ExperimentDir

    _announce(plan, plan.bar, json_)
    started = ExperimentDir(home.experiments / plan.id).verdict_file.exists()
    if plan.bar.panel != "off" or not json_ and not started:
        _estimate(home, plan, json_)
    if confirm and not json_ and not started and sys.stdin.isatty() and sys.stdout.isatty():
        trials = sum(t.trials for t in plan.setup.tasks) * 2
        if typer.prompt(f"Start {trials} Trials? [y/N]", default="", show_default=False).strip().lower() not in ("y", "yes"):
            say(f"Not started; nothing recorded. (Scripts: --yes starts without asking.)")
            raise typer.Exit(0)
    report, close = reporter(quiet=json_)
    try:
        exp, outcome = experiments_core.start(home, plugins, plan, workers=workers, report=report, executor=executor)
    except experiments_core.AlreadyRunning as e:
        if raise_if_running:
            raise
        fail(str(e))
    except experiments_core.Refused as e:
        if not fresh:
            fail(str(e))
        fail(f"{e}. It stands as it ran; to start a fresh Experiment beside it, run: "
             f"{fresh_command(experiments_core.free_label(home, plan))}")
    except experiments_core.PlanError as e:
        fail(str(e))
    except experiments_core.ExperimentErrored as e:
        if json_:  # a script reading stdout gets an answer it can parse, not nothing
            emit_json_line({"id": plan.id, "outcome": "errored", "verdict": None, "error": str(e)})
        fail(str(e), code=1)
    finally:
        close()
    return exp, outcome


def fresh_command(label: str) -> str:
    """The command the user typed, with ``--label LABEL`` in place of any ``--label``/``--new``."""
    args, skip = [], False
    for arg in sys.argv[1:]:
        if skip:
            skip = False
        elif arg == "--label":
            skip = True
        elif arg != "--new" and not arg.startswith("--label="):
            args.append(arg)
    return shlex.join(["assay", *args, "--label", label])


def _evals_app(plugins: plugin_loading.Plugins) -> typer.Typer:
    evals = typer.Typer(help="Prepare what Experiments run on.", no_args_is_help=True)

    @evals.command("prepare-arms")
    def prepare_arms(
        candidate: Candidate = None,
        baseline: BaselineRef = None,
        suite: Suites = [],
        factory: FactoryOpt = Path("."),
        baseline_harness: BaselineHarness = None,
        baseline_model: BaselineModel = None,
        baseline_effort: BaselineEffort = None,
        baseline_runner: BaselineRunner = None,
        candidate_harness: CandidateHarness = None,
        candidate_model: CandidateModel = None,
        candidate_effort: CandidateEffort = None,
        candidate_runner: CandidateRunner = None,
        json_: bool = JsonOpt,
    ) -> None:
        """Resolve and freeze both Arms (Factory builds, Custom-runner manifests) without running a Trial."""
        from assay.engine.start import prepare_arms as prepare
        from assay.storage.records import Bar

        home = AssayHome.from_env()
        plan = make_plan(plugins, home, Bar(), None, None, factory, suite, arm_flags(locals()), sandbox_fallback=True)
        arms = prepare(home, plan)
        if json_:
            emit_json({"id": plan.id, "arms": arms})
            return
        for arm, data in arms.items():
            say(f"{arm.title():9} {plan.setup.arm(arm).label()}  ->  {data['build']}")

    return evals


def _announce(plan: Any, bar: Bar, json_: bool) -> None:
    if json_:
        return
    from assay import verdict as verdicts
    from assay.storage.records import ARMS

    setup = plan.setup
    say(f"Experiment {setup.id}" + (f" (label {setup.label}, beside the one these Arms name)" if setup.label else ""))
    if setup.release:
        say(f"  Release   {setup.release.commit[:10]}, since the last release {setup.release.tag} "
            f"({setup.release.tag_commit[:10]})")
    for arm in ARMS:
        say(f"  {arm.title():9} {setup.arm(arm).label()}")
    counts = {t.trials for t in setup.tasks}
    k = counts.pop() if len(counts) == 1 else None
    say(f"  Eval tasks: {len(setup.tasks)} in {', '.join(setup.suites)}; sandbox: {setup.sandbox}")
    if bar.model_grader_shared_family:
        say(f"  {shared_family_note(bar.model_grader_shared_family)}")
    tasks = _plural(len(setup.tasks), "task")
    if plan.chosen_because:
        say("  Suites chosen from the change:")
        for line in plan.chosen_because:
            say(f"    {line}")
    if bar.efficiency:
        say(f"  Efficiency in the Bar: the change is meant to save {bar.efficiency_margin:.0%} of its "
            f"{bar.efficiency}; judged paired per task, beside the pass share")
    if k is not None:
        chance = verdicts.chance_of_clear_first_look(len(setup.tasks), k, bar, sequence_from=bar.sequence_from or 2)
        say(
            f"  Before the start: with {tasks} and {_plural(k, 'Trial')} per Arm each, the chance of a "
            f"clear Verdict if the Arms are equal is {chance:.0%}"
            + (" at look 1, judged by the confidence sequence (plan to extend)." if bar.sequence_from == 1 else ".")
        )


def _estimate(home: AssayHome, plan: Any, json_: bool) -> None:
    """The spend estimate before the first Trial: each Arm's, then each panel seat's (printed as a
    JSON line of its own with ``--json``)."""
    from assay.engine.estimate import estimate

    est = estimate(home, plan)
    if json_:
        emit_json_line({"id": plan.id, "estimate": est})
        return
    money = lambda v: "cost unknown" if v is None else f"${v:.2f}"  # noqa: E731
    say("  Expected spend (from earlier Trials of the same Harness and Model, or runner):")
    for arm, e in est["arms"].items():
        minutes = "minutes unknown" if e["minutes"] is None else f"about {e['minutes']:g} min"
        tokens = "tokens unknown" if e["tokens"] is None else f"{e['tokens']:,} tokens"
        say(f"    {arm.title():9} {_plural(e['trials'], 'Trial')}, {e['sessions']:g} session(s), {minutes}, "
            f"{tokens}, {money(e['cost_usd'])} (from {_plural(e['history_trials'], 'earlier Trial')})")
    if plan.bar.panel == "off":
        return
    for seat, e in est["panel"].items():
        say(f"    panel {seat}: {_plural(e['sessions'], 'session')} x {money(e['price_usd'])} = {money(e['cost_usd'])}")
    limit = est["panel_spending_limit"]
    say(f"    panel total {money(est['panel_cost_usd'])}" + (f"; it pauses at {money(limit)} per run" if limit else ""))


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _conclude(exp: Any, outcome: str, json_: bool) -> None:
    from assay.engine.results import command_of, read_verdict

    verdict = read_verdict(exp)
    if json_:
        line = {"id": exp.id, "outcome": outcome,
                "verdict": verdict["verdict"] if verdict else None,
                "interval": verdict["interval"] if verdict else None,
                "final": verdict["final"] if verdict else False,
                "waiting": verdict["waiting"] if verdict else []}
        if outcome in ("paused", "stopped") and (command := command_of(AssayHome.from_env(), exp.id)):
            line["summary"] = command.summary  # a pause names each login paused at a plan limit, and why
        if verdict and (verdict["look"] > 1 or verdict["decided_by"] != "credible interval"):
            # a one-look Experiment's line stays as it always was
            line |= {"look": verdict["look"], "decided_by": verdict["decided_by"]}
        if verdict and verdict.get("efficiency"):  # only when the Bar names a saving
            judged = verdict["efficiency"]
            line["efficiency"] = {k: judged[k] for k in ("measure", "margin", "verdict", "interval", "saving")}
        emit_json_line(line)
    else:
        print_result(exp, outcome, verdict)
    if outcome in ("paused", "stopped"):
        raise typer.Exit(EXIT_PAUSED)
    if verdict and not verdict["final"]:
        raise typer.Exit(EXIT_NOT_FINAL)


def print_result(exp: Any, outcome: str, verdict: dict | None) -> None:
    from assay.engine.results import command_of, task_results
    from assay.storage.userconfig import grading_config

    setup, bar = exp.setup(), exp.bar()
    say("")
    table(["TASK", "BASELINE", "CANDIDATE", ""], [
        (r.task, f"{r.baseline}/{r.trials}" if r.baseline is not None else "-",
         f"{r.candidate}/{r.trials}" if r.candidate is not None else "-",
         "dropped (void)" if r.dropped else "" if r.complete else
         "waits on people's reviews" if r.waits_on == "people" else "waits on its Scores")
        for r in task_results(exp, setup, bar, grading_config(AssayHome.from_env().root).families)
    ])
    say("")
    if verdict:
        show_verdict(verdict, exp.id, one_look=bar.look_rule == "one-look")
    elif outcome == "paused" and (command := command_of(AssayHome.from_env(), exp.id)):
        say(f"Experiment {exp.id} {command.summary}.")  # which login paused at a plan limit, and why
    else:
        say(f"Experiment {exp.id} {outcome}: run the same command again to resume.")
    say(f"Results: {exp.path}")
    say(f"Show again: assay experiments {exp.id}")


def experiments(
    id: str = typer.Argument(None, help="Show one Experiment (an id or a unique prefix)."),
    trial: str = typer.Argument(None, help="Show one Trial of it, every attempt: SUITE/TASK:ARM-N, as listed."),
    pair: str = typer.Option(None, "--pair", help="Show one pair of process Trials blind, as a reader sees it."),
    reader: str = typer.Option(None, "--reader", help="With --pair: the reader (default: $USER)."),
    json_: bool = JsonOpt,
) -> None:
    """List Experiments, or show one: Arms, Bar, per-task pairs, every Trial, minutes, the Verdict."""
    from assay.engine.results import describe, listing
    from assay.storage.userconfig import grading_config

    home = AssayHome.from_env()
    if pair:
        from assay.cli.review_cmd import show_pair

        if not id:
            fail("--pair needs the Experiment: assay experiments ID --pair PAIR")
        show_pair(find_experiment(home, id), pair, reader, json_)
        return
    if trial:
        _show_trial(find_experiment(home, id), trial, json_)
        return
    if id:
        exp = find_experiment(home, id)
        data = describe(exp, command_record(home, exp.id), grading_config(home.root).families, home)
        if json_:
            emit_json(data)
        else:
            _show(data)
        return
    rows, broken = listing(home)
    for line in broken:
        say(f"assay: warning: {line}", err=True)
    if json_:
        emit_json(rows)
        return
    table(["ID", "LABEL", "STARTED", "STATE", "VERDICT", "FINAL", "BASELINE", "CANDIDATE", "SUITES", "RELEASE"], [
        (r["id"], r["label"] or "", _when(r["created_at"]), r["state"], r["verdict"]["verdict"] if r["verdict"] else "-",
         "-" if r["final"] is None else "yes" if r["final"] else "no: " + "; ".join(w["on"] for w in r["waiting"] if w["blocks"]),
         r["baseline"], r["candidate"],
         ",".join(r["suites"]), f"{r['release']['commit'][:10]} since {r['release']['tag']}" if r["release"] else "")
        for r in rows
    ], empty="No Experiments yet. Start one with `assay experiment`.")


def _show_trial(exp: Any, key: str, json_: bool) -> None:
    """``assay experiments ID TRIAL``: one Trial's attempts, read from its own files alone."""
    from assay.engine.results import trial_rows

    slot = exp.find_slot(exp.setup(), key)
    if slot is None:
        fail(f"no Trial {key} in Experiment {exp.id} (name it SUITE/TASK:ARM-N, as `assay experiments {exp.id}` lists it)")
    rows = trial_rows(exp, slot)
    if json_:
        emit_json({"id": exp.id, "trial": key, "attempts": rows})
        return
    say(f"Trial {key} of Experiment {exp.id}")
    table(["ATTEMPT", "OUTCOME", "VOID CAUSE", "ENDED", "SCORE", "WHY", "FOLDER"], [
        (t["attempt"], t["outcome"], t["void_cause"] or "", _when(t["ended_at"]),
         ("pass" if t["score"]["passed"] else "fail") if t["score"] else "", _why(t), t["folder"])
        for t in rows
    ], empty="No attempt has finished yet.")


def _when(iso: str) -> str:
    """A recorded time as a person reads it: local, to the minute."""
    import datetime as dt

    return dt.datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")


def _show(data: dict) -> None:
    from assay.storage.records import ARMS

    say(f"Experiment {data['id']}" + (f" (label {data['label']})" if data["label"] else "")
        + f": {data['state']}" + (f" ({data['outcome']})" if data["outcome"] else ""))
    if data["state"] == "paused" and data["summary"]:
        say(f"  {data['summary'][0].upper()}{data['summary'][1:]}")
    if data["release"]:
        release = data["release"]
        say(f"  Release   {release['commit'][:10]}, since the last release {release['tag']} "
            f"({release['tag_commit'][:10]})")
    for arm in ARMS:
        say(f"  {arm.title():9} {data['labels'][arm]}; {data['minutes'][arm]:.1f} min")
    bar = data["bar"]
    say(f"  Bar: margin {bar['margin']}, level {bar['level']}, seed {bar['seed']}, draws {bar['draws']}, "
        f"timeout {bar['timeout_seconds']}s")
    say(f"  Sandbox: {data['sandbox']}" + ("; grading ran unsandboxed (--sandbox none)"
                                           if data["grading"]["unsandboxed"] else ""))
    say("")
    table(["TASK", "ARM", "#", "ATTEMPT", "OUTCOME", "VOID CAUSE", "SCORE", "WHY"], [
        (t["task"], t["arm"], t["index"], t["attempt"], t["outcome"], t["void_cause"] or "",
         ("pass" if t["score"]["passed"] else "fail") if t["score"] else "", _why(t))
        for t in data["trials"]
    ], empty="No Trials yet.")
    say("")
    for finding in data["findings"]:
        say(f"Finding: {finding}")
    for look in data["looks"] if len(data["looks"]) > 1 else ():
        shown = f"{look['verdict']}, [{look['interval'][0]:+.3f}, {look['interval'][1]:+.3f}] by the {look['decided_by']}" \
            if look["verdict"] and look["interval"] else (look["verdict"] or "running")
        say(f"Look {look['number']} ({look['at'][:16]}, {look['tasks']} Eval tasks): {shown}")
    if data["verdict"]:
        show_verdict(data["verdict"], data["id"], one_look=data["bar"]["look_rule"] == "one-look")


WHY_SHOWN = 100  # characters of a Trial's diagnostic or Score reason in its table row


def _why(trial: dict) -> str:
    """The first line of why a Trial ended as it did: its diagnostic when it didn't deliver, else the Score's why."""
    text = trial["diagnostic"] if trial["outcome"] != "delivered" and trial.get("diagnostic") else \
        (trial["score"] or {}).get("why") or ""
    line = text.strip().split("\n")[0]
    return line if len(line) <= WHY_SHOWN else line[:WHY_SHOWN - 1] + "…"


def _recheck_command(plugins: plugin_loading.Plugins):
    def recheck(
        experiment: str = typer.Argument(..., help="The Experiment (an id or a unique prefix)."),
        trial: str = typer.Argument(..., help="The Trial, as listed: SUITE/TASK:ARM-N."),
        pass_: bool = typer.Option(False, "--pass", help="Your judgement: the Trial passes."),
        fail_: bool = typer.Option(False, "--fail", help="Your judgement: the Trial fails."),
        why: str = typer.Option(..., "--why", help="Why, in a sentence."),
        json_: bool = JsonOpt,
    ) -> None:
        """Record your recheck of a Trial's Score beside the Grader's (--pass or --fail); the Verdict follows it."""
        from assay.engine import results
        from assay.storage.files import Locked, NotALockFile
        from assay.storage.userconfig import grading_config

        if pass_ == fail_:
            fail("give one judgement: --pass or --fail" + (", not both" if pass_ else ""))
        passed = pass_

        home = AssayHome.from_env()
        exp = find_experiment(home, experiment)
        try:
            result = results.recheck(home, exp, trial, passed, why, os.environ.get("USER", "unknown"),
                                     results.wrong_finding_kinds(plugins), grading_config(home.root).families)
        except ValueError as e:
            fail(str(e))
        except Locked:
            fail(f"Experiment {exp.id} is running; recheck it once it ends", code=1)
        except NotALockFile as e:
            fail(str(e))
        waiting = [item["trial"] for item in result.recheck if not item["rechecked"]]
        shown = results.read_verdict(exp)
        if json_:
            emit_json({"id": exp.id, "trial": trial, "passed": passed, "verdict": result.verdict,
                       "interval": result.interval, "final": shown["final"], "waiting": waiting,
                       "waiting_on": shown["waiting"]})
            return
        say(f"Rechecked {trial}: {'pass' if passed else 'fail'}.")
        show_verdict(shown, exp.id, one_look=exp.bar().look_rule == "one-look")
        if shown["final"]:
            say("The Verdict is final.")

    return recheck


def stop(
    id: str = typer.Argument(..., help="The Experiment to stop (an id or a unique prefix)."),
    wait: float = typer.Option(60.0, help="Seconds to wait for it to end."),
    json_: bool = JsonOpt,
) -> None:
    """Stop a running Experiment (in-flight Trials are cut short, and re-run on resume) or Scoring run
    (what it didn't score waits for the next)."""
    from assay.storage import commands

    home = AssayHome.from_env()
    scoring = [r for r in commands.all_records(home) if r.kind == "scoring" and r.id == id]
    kind, found = ("scoring", id) if scoring else ("experiment", find_experiment(home, id).id)
    command = scoring[0] if scoring else command_record(home, found)
    what = f"Scoring run {found}" if scoring else f"Experiment {found}"
    problem = (f"{what} is not running" if command is None or not commands.runs(command)
               else None if commands.stop(command, wait) else f"{what} (pid {command.pid}) did not stop within {wait:.0f}s")
    if json_:
        emit_json({"kind": kind, "id": found, "stopped": problem is None, **({"error": problem} if problem else {})})
    if problem:
        fail(problem, code=1)
    if not json_:
        say(f"Stopped {what}; " + ("the next Scoring run takes up the rest." if scoring else "run it again to resume."))


def inbox(json_: bool = JsonOpt) -> None:
    """Commands that need you (failed, inconclusive, paused, stopped, errored) and those done."""
    from assay.engine.results import inbox as read_inbox

    box = read_inbox(AssayHome.from_env())
    if json_:
        emit_json(box)
        return
    say("Running:")
    table(["KIND", "ID", "STARTED", "STOP"], [
        (r["kind"], r["id"], _when(r["started_at"]), r["stop"]) for r in box["running"]])
    for r in box["running"]:
        for finding in r.get("findings", ()):
            say(f"  {r['id']} finding: {finding}")
    say("")
    for title, rows in (("Needs you", box["needs_you"]), ("Done", box["done"])):
        say(f"{title}:")
        table(["KIND", "ID", "OUTCOME", "SUMMARY"], [
            (r["kind"], r["id"], r["outcome"] or r["state"],
             f"{r['release']['commit'][:10]} since {r['release']['tag']}: {r['summary']}" if r["release"] else r["summary"])
            for r in rows])
        for r in rows:
            for finding in r.get("findings", ()):
                say(f"  {r['id']} finding: {finding}")
            for wait in r["waiting"]:
                say(f"  {r['id']} {'not final' if wait['blocks'] else 'note'}: {wait['text']}")
        say("")

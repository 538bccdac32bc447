"""``assay release-check [COMMIT]``: the one command a release script or CI job calls (docs/release.md).

It starts the release Experiment (or resumes it: the same release names the same Experiment),
waits printing progress, waits for the Scores that need a person's recheck, and then says
whether the release may ship. Exit codes:

- 0: ship. The Verdict is pass and final; or the release touches no Eval suite; or, on a
  terminal, you answered yes to releasing anyway over a fail or inconclusive Verdict.
- 1: the run errored (the Command log says why).
- 2: bad input, before any Trial: no release tag, an unknown commit, a malformed User config.
- 3: paused at a plan limit (it says when it can resume) or stopped (here, or in another process
  whose run this one waited for): run the same command again.
- 4: do not ship: the Verdict is fail or inconclusive, and no one answered yes (not a terminal,
  or you answered no).
- 5: no final Verdict yet: Scores wait on a recheck and ``--no-wait`` was given, or a Grader left
  Scores pending (run the same command again to grade them).
- 130: interrupted (Ctrl-C) while waiting: for rechecks (the Experiment is finished and kept), or
  for the same release's run in another process (which goes on).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from assay.cli.experiment_cmd import EXIT_NOT_FINAL, EXIT_PAUSED, FactoryOpt, execute, make_plan, print_result
from assay.cli.experiment_records import show_verdict
from assay.cli.output import emit_json_line, say, table
from assay.engine.results import read_verdict, waiting_text
from assay.storage import formats
from assay.storage.home import AssayHome
from assay.storage.records import Bar

if TYPE_CHECKING:
    from assay.hooks import plugin_manager as plugin_loading  # loaded on first use (cli.PluginsOnUse)

EXIT_HOLD = 4
EXIT_INTERRUPTED = 130


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    app.command("release-check")(_release_check_command(plugins))


def _release_check_command(plugins: plugin_loading.Plugins):
    def release_check(
        commit: str = typer.Argument("HEAD", help="The commit being released."),
        factory: FactoryOpt = Path("."),
        no_wait: bool = typer.Option(False, "--no-wait", help="Exit (code 5) instead of waiting for Scores to be rechecked."),
        poll: float = typer.Option(5.0, min=0.1, help="Seconds between looks while waiting (for your rechecks, or for a run of the same release in another process)."),
        model_grader: list[str] = typer.Option([], "--model-grader", help="Bar: a model Grader seat HARNESS:MODEL (repeatable)."),
        workers: int = typer.Option(2, min=1, help="Sessions running at once, Grader sessions included: at most 2 per login (two Arms on different logins: 4)."),
        sandbox: str = typer.Option(None, help="Sandbox backend (default: bwrap where it works, else none)."),
        unsandboxed_grader: bool = typer.Option(
            False, "--unsandboxed-grader", help="Let model Graders run under --sandbox none (docs/grading.md)."),
        json_: bool = typer.Option(False, "--json", help="Print one JSON line at the end (the text goes to stderr; never asks)."),
    ) -> None:
        """Before a release: run (or resume) its Experiment, wait for a final Verdict, and say
        whether it may ship (exit 0) or not (see docs/release.md for every exit code)."""
        if not json_:
            _check(commit, factory, no_wait, poll, model_grader, workers, sandbox, unsandboxed_grader, plugins, {})
            return
        seen: dict[str, Any] = {}
        code = 0
        try:
            with contextlib.redirect_stdout(sys.stderr):
                _check(commit, factory, no_wait, poll, model_grader, workers, sandbox, unsandboxed_grader, plugins, seen,
                       ask=False)
        except typer.Exit as e:
            code = e.exit_code
        verdict = read_verdict(seen["exp"]) if "exp" in seen else None
        emit = {"id": seen["exp"].id if "exp" in seen else None, "exit": code, "ship": code == 0,
                "verdict": verdict["verdict"] if verdict else None, "interval": verdict["interval"] if verdict else None,
                "final": verdict["final"] if verdict else False, "waiting": verdict["waiting"] if verdict else []}
        emit_json_line(emit)
        if code:
            raise typer.Exit(code)

    return release_check


def _check(commit: str, factory: Path, no_wait: bool, poll: float, model_grader: list[str], workers: int,
           sandbox: str | None, unsandboxed_grader: bool, plugins: plugin_loading.Plugins, seen: dict[str, Any],
           ask: bool = True) -> None:
    """The release check itself; ``seen`` gets the Experiment once there is one (for ``--json``)."""
    from assay.engine import release as releases
    from assay.engine.arms import ArmFlags
    from assay.engine.results import ExperimentVerdict
    from assay.engine.start import AlreadyRunning

    home = AssayHome.from_env()

    def planned(bar: Bar) -> Any:
        return make_plan(plugins, home, bar, None, sandbox, factory, [], (ArmFlags(commit), ArmFlags()),
                         unsandboxed_grader=unsandboxed_grader, release=True)

    while True:  # planned after any wait: the other run may have recorded the Bar
        plan = planned(Bar(model_graders=tuple(model_grader)))
        recorded = releases.recorded_bar(home, plan)
        if recorded is not None:  # planned again: the Bar decides each task's Trials too
            plan = planned(recorded)
        if _wait_for_other_run(home, plan.id, poll):
            continue
        try:
            exp, outcome = execute(home, plugins, plan, workers=workers, json_=False, raise_if_running=True)
            break
        except AlreadyRunning:  # another process took it between the look and the start
            continue
    seen["exp"] = exp
    if outcome in ("paused", "stopped"):
        _paused(exp, outcome, releases.pause(exp))
    result = formats.read(exp.verdict_file, ExperimentVerdict)
    print_result(exp, outcome, read_verdict(exp))
    if releases.waiting_rechecks(result) and not result.pending:
        result = _wait_for_rechecks(exp, result, no_wait=no_wait, poll=poll)
    if result.pending:
        say(f"No final Verdict: it {waiting_text(result, exp.id)}.", err=True)
        raise typer.Exit(EXIT_NOT_FINAL)
    _decide(home, exp, result, ask)


def _paused(exp: Any, outcome: str, pause: Any) -> NoReturn:
    """Say when a paused release Experiment can go on, and exit with its own code."""
    if outcome == "stopped":
        say(f"Experiment {exp.id} was stopped: run this command again to resume it.")
        raise typer.Exit(EXIT_PAUSED)
    hit = f" (hit at {_when(pause.hit_at)})" if pause.hit_at else ""
    say(f"Experiment {exp.id} paused at a plan limit{hit}.")
    if pause.resets_at:
        left = pause.resets_at - dt.datetime.now(dt.timezone.utc)
        minutes = max(0, int(left.total_seconds() // 60))
        say(f"It can resume once the limit resets, at {_when(pause.resets_at)} (in {minutes // 60}h{minutes % 60:02d}m): "
            "run this command again then.")
    else:
        said = f" (the session said: {pause.said})" if pause.said else ""
        say(f"It can resume once the plan's limit resets{said}: run this command again then.")  # a session's words
    raise typer.Exit(EXIT_PAUSED)


def _when(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _wait_for_other_run(home: AssayHome, exp_id: str, poll: float) -> bool:
    """Wait while the release Experiment is held by another process (a second CI job for the same
    commit); True once it has waited, so the caller plans again and carries on as a rerun would:
    resume what was left, report the Verdict reached. A run stopped on purpose while this one
    waited is not resumed behind the back of whoever stopped it."""
    from assay.engine.folder import ExperimentDir
    from assay.engine.results import command_of
    from assay.storage.commands import runs
    from assay.storage.files import is_locked

    lock = ExperimentDir(home.experiments / exp_id).lock_file
    if not is_locked(lock):
        return False
    record = command_of(home, exp_id)
    running = record is not None and runs(record)  # else a brief hold: a recheck, a review, an extension
    where = f" (process {record.pid}, since {_when(record.started_at)})" if running and record.pid else ""
    say(f"Experiment {exp_id} is already running in another process{where}: waiting for it to end "
        f"(follow it with `assay experiments {exp_id}`; Ctrl-C stops waiting, not the run).")
    while is_locked(lock):
        _sleep(poll, "the other run goes on: run this command again to wait for it.")
    ended = command_of(home, exp_id)
    if running and ended and ended.state == "stopped":
        say(f"Experiment {exp_id} was stopped in the other process: run this command again to resume it.")
        raise typer.Exit(EXIT_PAUSED)
    say("The other run ended.")
    return True


def _sleep(poll: float, kept: str) -> None:
    """One pause between looks while waiting; Ctrl-C ends the wait (exit 130) saying what is kept."""
    try:
        time.sleep(poll)
    except KeyboardInterrupt:
        say(f"\nStopped waiting; {kept}", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _wait_for_rechecks(exp: Any, result: Any, *, no_wait: bool, poll: float) -> Any:
    """List the Scores waiting on a person's recheck and wait until none is left (a recheck can
    move the Verdict and list others: the wait ends only when the Verdict is final)."""
    from assay.engine.release import waiting_rechecks
    from assay.engine.results import ExperimentVerdict

    shown: list[str] = []
    while (waiting := waiting_rechecks(result)) and not result.pending:
        if waiting != shown:
            say(f"\nWaiting for your recheck of {len(waiting)} Score{'s' * (len(waiting) != 1)} "
                f"(the Verdict is {result.verdict} until then):")
            table(["TRIAL", "GRADER SAID", "WHY LISTED"], [
                (item["trial"], "pass" if item["passed"] else "fail",
                 ", ".join(w for w, on in (("borderline", item["borderline"]), ("decisive", item["decisive"])) if on))
                for item in result.recheck if not item["rechecked"]])
            say(f"  Recheck each: assay recheck {exp.id} TRIAL --pass|--fail --why '…'")
            shown = waiting
            if no_wait:
                say("Not waiting (--no-wait): no final Verdict yet.", err=True)
                raise typer.Exit(EXIT_NOT_FINAL)
        _sleep(poll, "the Experiment is kept: run this command again to wait.")
        result = formats.read(exp.verdict_file, ExperimentVerdict)
    say("\nEvery listed Score is rechecked.")
    show_verdict(read_verdict(exp) or {}, exp.id, one_look=exp.bar().look_rule == "one-look")
    return result


def _decide(home: AssayHome, exp: Any, result: Any, ask: bool = True) -> None:
    """Ship on pass; on fail or inconclusive ask a person on a terminal, and hold otherwise."""
    from assay.engine.release import record_decision

    release = exp.setup().release
    what = f"Release {release.commit[:10]}" if release else f"Experiment {exp.id}"
    if result.verdict == "pass":
        say(f"{what}: Verdict pass. It may ship.")
        return
    interval = ""
    if result.interval:
        lo, hi = result.interval
        interval = f", interval [{lo:+.3f}, {hi:+.3f}]"
    if not ask or not sys.stdin.isatty():
        say(f"{what} is held: Verdict {result.verdict}{interval}. Run `assay release-check` on a "
            "terminal to decide whether to release anyway.", err=True)
        raise typer.Exit(EXIT_HOLD)
    answer = typer.prompt(f"The Verdict is {result.verdict}{interval}. Release anyway? [y/N]", default="",
                          show_default=False, err=True)
    shipped = answer.strip().lower() in ("y", "yes")
    record_decision(home, exp.id, release, result.verdict, shipped, os.environ.get("USER", "unknown"))
    if not shipped:
        say(f"{what} is held: not released.", err=True)
        raise typer.Exit(EXIT_HOLD)
    say(f"{what}: released anyway over a {result.verdict} Verdict (recorded in the Activity log).")


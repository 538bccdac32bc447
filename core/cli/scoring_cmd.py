"""``assay score``, ``assay scoring-runs``, ``assay scores``, ``assay bug-origins`` and ``assay built-with``:
the Scoring run (docs/scoring.md)."""

from __future__ import annotations

import typer
from assay.cli import output
from assay.hooks.loaded import Plugins


def register(app: typer.Typer, plugins: Plugins) -> None:
    @app.command("score")
    def score(
        seed: int = typer.Option(None, "--seed", help="Seed of the sample's draw (default: a fresh one, recorded)."),
        sandbox: str = typer.Option("bwrap", "--sandbox", help="Sandbox backend for the Grader sessions."),
        unsandboxed: bool = typer.Option(False, "--unsandboxed-grader",
                                         help="With --sandbox none: let Grader sessions run unsandboxed."),
        timeout: float = typer.Option(1800, "--timeout", min=1, help="Seconds one Grader session may take."),
        json_out: bool = typer.Option(False, "--json", help="Print the run's result as JSON."),
    ) -> None:
        """Start a Scoring run: sample the window's merged pull requests and grade each blind."""
        from assay.scoring.github import GitHub, GitHubError
        from assay.scoring.run import INCOMPLETE, ScoringRunner
        from assay.storage.home import AssayHome
        from assay.storage.userconfig import UserConfigError, scoring_config

        home = AssayHome.from_env()
        try:
            config = scoring_config(home.root)
        except UserConfigError as e:
            output.fail(str(e))
        if not config.owners:
            output.fail(f"{home.root / 'config.toml'}: scoring.owners is empty; name the GitHub owners whose "
                        "pull requests the Scoring run samples (docs/scoring.md)")
        if not config.seats:
            output.fail(f"{home.root / 'config.toml'}: scoring.seats is empty; name at least one "
                        "HARNESS:MODEL Grader seat, and a second from another family (docs/scoring.md)")
        if sandbox == "none" and not unsandboxed:
            output.fail("--sandbox none: the Scoring run's Grader sessions would run unsandboxed, able to read "
                        "your credentials; pass --unsandboxed-grader to allow it")
        backend = plugins.sandbox_backends().get(sandbox)
        if backend is None:
            output.fail(f"--sandbox: no sandbox backend '{sandbox}' is installed "
                        f"(known: {', '.join(sorted(plugins.sandbox_backends()))})")
        check = backend.check()
        if not check.works:
            output.fail(f"--sandbox {sandbox} can't run here: {check.reason}")
        github = GitHub()
        try:
            github.check()
        except GitHubError as e:
            output.fail(str(e))
        runner = ScoringRunner(home, config, github, plugins.harnesses(), backend, timeout,
                               report=lambda line: None if json_out else output.say(line, err=True))
        try:
            result = runner.score(seed)
        except GitHubError as e:
            output.fail(f"the Scoring run failed: {e}", 1)
        if result is None:
            message = "skipped: another Scoring run is running"
            output.emit_json({"skipped": True, "why": message}) if json_out else output.say(message)
            return
        shown = {"id": result.run.id, "outcome": result.outcome,
                 "window": [result.run.window_start, result.run.window_end],
                 "seed": result.run.seed, "sample": [p.key for p in result.run.sample],
                 "scored": list(result.scored), "left": list(result.left), "stopped": result.stopped or None,
                 "not_graded": dict(result.failed), "dropped": dict(result.dropped),
                 "bug_origins_proposed": result.traced}
        if json_out:
            output.emit_json(shown)
        else:
            output.say(f"Scoring run {result.run.id} {result.outcome}: {result.summary()}"
                       + (f" ({result.stopped})" if result.stopped else ""))
        if result.stopped:
            raise typer.Exit(3)
        if result.outcome == INCOMPLETE:
            raise typer.Exit(4)

    @app.command("scoring-runs")
    def scoring_runs(
        id: str = typer.Argument(None, help="A Scoring run's id: show its sample and how it went."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List the Scoring runs (running or how each ended), or show one: its window, seed, what it
        drew and what became of each, and the end of its Command log."""
        from assay.scoring import runs
        from assay.scoring.store import ScoringStore
        from assay.storage.home import AssayHome

        store = ScoringStore(AssayHome.from_env())
        if id is None:
            rows = runs.listing(store)
            if json_out:
                output.emit_json({"scoring_runs": rows})
                return
            output.table(["id", "state", "outcome", "started", "window", "sampled"],
                         [[r["id"], r["state"], r["outcome"] or "-", r["started_at"][:19],
                           f"{r['window'][0][:10]} .. {r['window'][1][:10]}" if r["window"] else "-", r["sampled"]]
                          for r in rows], empty="(no Scoring run yet: run `assay score`)")
            return
        try:
            shown = runs.describe(store, id)
        except runs.UnknownRun as e:
            output.fail(str(e), 1)
        if json_out:
            output.emit_json(shown)
            return
        output.say(f"Scoring run {shown['id']}: {shown['state']}" + (f" ({shown['outcome']})" if shown["outcome"] else "")
                   + (f", window {shown['window'][0][:19]} .. {shown['window'][1][:19]}, seed {shown['seed']}"
                      if shown["window"] else ""))
        if shown["summary"]:
            output.say(shown["summary"])
        output.table(["pull request", "built with", "state"],
                     [[p["key"] + (" (carried)" if p["carried"] else "") + (" (yours)" if p["yours"] else ""),
                       p["built_with"], p["state"]] for p in shown["sample"]], empty="(nothing drawn yet)")
        if shown["running"]:
            output.say(f"Stop it: assay stop {shown['id']}")

    @app.command("scores")
    def scores(
        pull: str = typer.Argument(None, help="A pull request, OWNER/REPO#N: show its Scores."),
        mine: bool = typer.Option(False, "--mine", help="Enter your own Scores of PULL (the model's stay hidden "
                                                        "until all five of yours are in)."),
        correct: str = typer.Option(None, "--correct", help="pass or fail (with --mine)."),
        scoped: str = typer.Option(None, "--scoped", help="pass or fail (with --mine)."),
        tested: str = typer.Option(None, "--tested", help="pass or fail (with --mine)."),
        honest: str = typer.Option(None, "--honest", help="pass or fail (with --mine)."),
        standards: str = typer.Option(None, "--standards", help="pass or fail (with --mine)."),
        why: list[str] = typer.Option([], "--why", help="CRITERION=REASON, one per criterion you score (with --mine)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List each week's sample and its Scores with each criterion's calibration, or show one pull
        request's; with --mine, score it yourself."""
        from assay.scoring import yours
        from assay.scoring.store import CRITERIA, ScoringStore
        from assay.storage.home import AssayHome

        store = ScoringStore(AssayHome.from_env())
        given = {"Correct": correct, "Scoped": scoped, "Tested": tested, "Honest": honest, "Standards": standards}
        if mine or any(given.values()) or why:
            if not pull:
                output.fail("--mine: name the pull request you are scoring (OWNER/REPO#N)")
            try:
                entered = yours.enter(store, pull, given, why, ask=_asker() if not any(given.values()) else None)
            except ValueError as e:
                output.fail(str(e))
            missing = [name for name in CRITERIA if name not in entered.criteria]
            if missing and not json_out:
                output.say(f"saved; still to score: {', '.join(missing)} (the model's Scores stay hidden until then)")
        if pull is not None:
            shown = yours.one(store, pull)
            if shown is None:
                output.fail(f"no Scores for {pull} (list them with `assay scores`)", 1)
            output.emit_json(shown) if json_out else _show_one(shown)
            return
        listing = yours.listing(store)
        if json_out:
            output.emit_json(listing)
            return
        for c in listing["calibration"]:
            output.say(f"{c['criterion']:<9} {c['describe']}")
        for version, passes in listing["by_harness_version"].items():
            output.say(f"{version}: " + ", ".join(f"{name} {count}" for name, count in passes.items()))
        if listing["waiting_for_you"]:
            output.say(f"waiting for your Scores: {', '.join(listing['waiting_for_you'])}")
        if not listing["weeks"]:
            output.say("(no Scoring run yet: run `assay score`)")
        for week in listing["weeks"]:
            window = f"{week['window'][0][:10]} .. {week['window'][1][:10]}, " if week["window"] else ""
            output.say(f"\nweek {week['week'] or '?'} ({window}Scoring run {week['run']}):")
            output.table(["pull request", "merged", "built with", *CRITERIA],
                         [[p["key"], p["merged_at"][:10], p["built_with"],
                           *(_cell(p, name) for name in CRITERIA)] for p in week["pulls"]])

    @app.command("bug-origins")
    def bug_origins(
        issue: str = typer.Argument(None, help="A bug issue, OWNER/REPO#N: show (or settle) its Bug origin."),
        confirm: bool = typer.Option(False, "--confirm", help="Confirm the proposed origin."),
        correct: str = typer.Option(None, "--correct", help="The pull request that really introduced it (#N or OWNER/REPO#N)."),
        none: bool = typer.Option(False, "--none", help="The bug has no origin to count."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List Bug origins and their state, or show one; settle it with --confirm, --correct PR or --none."""
        from assay.scoring import origins
        from assay.scoring.github import GitHub, GitHubError
        from assay.storage import formats
        from assay.storage.commands import now
        from assay.storage.home import AssayHome
        from assay.storage.userconfig import UserConfigError, scoring_config

        home = AssayHome.from_env()
        if sum((confirm, bool(correct), none)) > 1:
            output.fail("--confirm, --correct and --none: say one")
        if (confirm or correct or none) and not issue:
            output.fail("name the bug issue to settle (OWNER/REPO#N)")
        try:
            if confirm or correct or none:
                github = GitHub()
                github.check()
                bug = origins.settle(home, github, issue, confirm=confirm, correct=correct, none=none,
                                     suite=scoring_config(home.root).review_suite, now=now())
            elif issue:
                bug = origins.load(home, issue)
        except (origins.OriginError, GitHubError, UserConfigError) as e:
            output.fail(str(e))
        if issue:
            shown = formats.unstructure(bug)
            if json_out:
                output.emit_json(shown)
                return
            _show_bug(shown)
            return
        bugs = origins.load_all(home)
        against = origins.counted(bugs)
        if json_out:
            output.emit_json({"bug_origins": [formats.unstructure(b) for b in bugs], "counted_against": against})
            return
        output.table(["bug", "state", "introduced by", "built with"],
                     [[b.key, b.state, (b.settled or b.proposed).pull if (b.settled or b.proposed) else "-",
                       ((b.settled or b.proposed).built_with or "-") if (b.settled or b.proposed) else "-"]
                      for b in bugs], empty="(no Bug origins yet: run `assay score`)")
        for setup, count in sorted(against.items()):
            output.say(f"confirmed against {setup}: {count}")

    @app.command("built-with")
    def built_with(
        harness: str = typer.Option(..., "--harness", help="The Harness that ran the session."),
        model: str = typer.Option(..., "--model", help="The Model it ran."),
        effort: str = typer.Option(..., "--effort", help="The Effort it ran at."),
        version: str = typer.Option(None, "--version", help="The Harness's version (default: the installed one's)."),
    ) -> None:
        """Print the Built-with line a Factory stamps on the pull request a session made."""
        from assay.scoring.builtwith import BuiltWith

        if version is None:
            found = plugins.harnesses().get(harness)
            if found is None:
                output.fail(f"--harness: no Harness '{harness}' is installed (known: "
                            f"{', '.join(sorted(plugins.harnesses()))}); or give --version")
            try:
                version = found.locate().version
            except Exception as e:  # locate() raises whatever its Harness raises when the CLI is missing
                output.fail(f"--harness {harness}: its version can't be read here ({e}); give --version")
        output.say(BuiltWith(harness, model, effort, version).line())


def _cell(pull: dict, name: str) -> str:
    if pull["state"] != "scored":
        return pull["state"].partition(":")[0]  # not scored yet, dropped (the JSON says why)
    if pull["model"] is None:
        return "hidden"
    return "pass" if pull["model"][name]["passed"] else "fail"


def _show_one(shown: dict) -> None:
    output.say(f"{shown['key']}  built with {shown['built_with']}; graded by {shown['grader'] or '(not yet)'}")
    for name in shown["criteria_order"]:
        model = shown["model"][name] if shown["model"] else None
        mine = shown["mine"].get(name) if shown["mine"] else None
        line = f"  {name:<9} model: " + (("pass" if model["passed"] else "fail") + f"  {model['why']}" if model else
                                         shown["hidden"] or "not scored yet")
        if mine:
            line += f"\n  {'':<9} yours: {'pass' if mine['passed'] else 'fail'}  {mine['why']}"
        output.say(line)


def _asker():
    """On a terminal: ask for each criterion still missing, verdict then reason."""
    import sys

    if not sys.stdin.isatty():
        return None

    def ask(name: str) -> tuple[str, str]:
        verdict = typer.prompt(f"{name} (pass/fail)")
        return verdict, typer.prompt(f"{name}: why")
    return ask


def _show_bug(bug: dict) -> None:
    output.say(f"{bug['key']}  {bug['title']}  [{bug['state']}]")
    for label, origin in (("proposed", bug["proposed"]), ("settled", bug["settled"])):
        if origin:
            output.say(f"  {label}: {origin['commit'][:12]} in {origin['pull'] or '(no pull request)'}"
                       f"{'; ' + origin['built_with'] if origin['built_with'] else ''}")
    if bug["why"]:
        output.say(f"  why: {bug['why']}")
    if bug["eval_proposal"]:
        output.say(f"  proposed Eval task: {bug['eval_proposal']} (take it in with `assay approve {bug['eval_proposal']}`)")

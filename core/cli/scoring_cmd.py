"""``assay score``, ``assay scores`` and ``assay built-with``: the Scoring run (docs/scoring.md)."""

from __future__ import annotations

from typing import Any

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
        from assay.scoring.run import ScoringRunner
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
                               report=lambda line: None if json_out else typer.echo(line, err=True))
        try:
            result = runner.score(seed)
        except GitHubError as e:
            output.fail(f"the Scoring run failed: {e}", 1)
        if result is None:
            message = "skipped: another Scoring run is running"
            output.emit_json({"skipped": True, "why": message}) if json_out else typer.echo(message)
            return
        shown = {"id": result.run.id, "window": [result.run.window_start, result.run.window_end],
                 "seed": result.run.seed, "sample": [p.key for p in result.run.sample],
                 "scored": list(result.scored), "left": list(result.left), "stopped": result.stopped or None}
        if json_out:
            output.emit_json(shown)
        else:
            typer.echo(f"Scoring run {result.run.id}: {len(result.scored)} scored, {len(result.left)} left for the "
                       f"next run" + (f" ({result.stopped})" if result.stopped else ""))
        if result.stopped:
            raise typer.Exit(3)

    @app.command("scores")
    def scores(
        pull: str = typer.Argument(None, help="A pull request, OWNER/REPO#N: show its Scores."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List the Scoring run's Scores by pull request, or show one pull request's."""
        from assay.scoring.store import CRITERIA, ScoringStore
        from assay.storage import formats
        from assay.storage.home import AssayHome

        store = ScoringStore(AssayHome.from_env())
        found = store.all_scores()
        if pull is not None:
            found = [s for s in found if s.pull.key == pull]
            if not found:
                output.fail(f"no Scores for {pull} (list them with `assay scores`)", 1)
        rows: list[dict[str, Any]] = [formats.unstructure(s) for s in found]
        if json_out:
            output.emit_json(rows[0] if pull else rows)
            return
        if pull:
            s = found[0]
            typer.echo(f"{s.pull.key}  built with {s.pull.harness} {s.pull.version or ''} · {s.pull.model} · "
                       f"{s.pull.effort}; graded by {s.grader_harness}:{s.grader_model}")
            for name in CRITERIA:
                c = s.criteria[name]
                typer.echo(f"  {name:<9} {'pass' if c.passed else 'fail'}  {c.why}")
            return
        output.table(["pull request", "merged", "built with", *CRITERIA],
                     [[s.pull.key, s.pull.merged_at.date(), f"{s.pull.harness}/{s.pull.model}",
                       *("pass" if s.criteria[n].passed else "fail" for n in CRITERIA)] for s in found],
                     empty="(no Scores yet: run `assay score`)")

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
        typer.echo(BuiltWith(harness, model, effort, version).line())

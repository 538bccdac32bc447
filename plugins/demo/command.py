"""``assay demo``: install the bundled suite and run demo-careful against demo-hasty, offline;
``assay demo scoring``: a whole Scoring run on a bundled pull-request history, offline."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from assay.cli.output import JsonOpt, fail, say

if TYPE_CHECKING:  # `assay demo --help` needs none of them
    from assay.hooks.loaded import Plugins


def demo_command(plugins: Plugins):
    def demo(
        ctx: typer.Context,
        workers: int = typer.Option(2, min=1, help="Sessions running at once, Grader sessions included: at most 2 per login (two Arms on different logins: 4)."),
        sandbox: str = typer.Option(None, help="Sandbox backend (default: bwrap where it works, else none)."),
        json_: bool = JsonOpt,
    ) -> None:
        """Run a complete Experiment offline on the bundled demo suite (scripted runners, not AI).

        The Baseline is demo-hasty and the Candidate demo-careful: two scripted Custom runners
        on 8 small buggy projects, 3 Trials each, graded by their tests on the committed HEAD.
        `assay demo scoring` runs a whole Scoring run instead.
        """
        if ctx.invoked_subcommand is not None:
            return
        from assay.cli.experiment_cmd import run_plan
        from assay.engine import start
        from assay.engine.arms import ArmFlags
        from assay.plugins.demo import CAREFUL, HASTY
        from assay.plugins.demo.suite import install_demo_suite
        from assay.storage.home import AssayHome
        from assay.storage.records import Bar

        home = AssayHome.from_env()
        try:
            suite = install_demo_suite(home)
            plan = start.plan(
                home, plugins, factory_path=None, suites=[suite], bar=Bar(), sandbox=sandbox, sandbox_fallback=sandbox is None,
                candidate=ArmFlags(runner=CAREFUL), baseline=ArmFlags(runner=HASTY),
            )
        except (start.PlanError, OSError, RuntimeError) as e:
            fail(str(e))
        if sandbox is None and plan.setup.sandbox != "bwrap" and not json_:
            say("warning: bwrap can't run here, so the demo's Trials run without a sandbox "
                "(`assay sandbox check` says why)", err=True)
        if not json_:
            say("The bundled demo: two scripted Custom runners (not AI agents), demo-hasty as the "
                "Baseline and demo-careful as the Candidate.\n")
        run_plan(home, plugins, plan, workers=workers, json_=json_)

    return demo


def scoring_command(plugins: Plugins):
    def scoring(
        sandbox: str = typer.Option(None, help="Sandbox backend for the Grader sessions (default: bwrap where "
                                               "it works, else none)."),
        json_: bool = JsonOpt,
    ) -> None:
        """Run a whole Scoring run offline on a bundled repository and pull-request history, graded by a
        scripted Grader (not a model), in a folder of its own: your Scoring runs are not touched."""
        import time

        from assay.cli.output import emit_json, say, table
        from assay.plugins.demo.scoring import run_demo
        from assay.scoring import origins, yours
        from assay.scoring.store import CRITERIA, ScoringStore
        from assay.storage import files
        from assay.storage.home import AssayHome

        started = time.monotonic()
        backends = plugins.sandbox_backends()
        name = sandbox or ("bwrap" if "bwrap" in backends and backends["bwrap"].check().works else "none")
        backend = backends.get(name)
        if backend is None or not backend.check().works:
            fail(f"--sandbox {name}: " + (backend.check().reason if backend else "no such sandbox backend is installed"))
        if sandbox is None and name != "bwrap" and not json_:
            say("warning: bwrap can't run here, so the demo's Grader sessions run without a sandbox "
                "(`assay sandbox check` says why)", err=True)
        home = AssayHome(AssayHome.from_env().root / "demos" / "scoring")
        files.remove_tree(home.root)
        if not json_:
            say("The Scoring run's demo: the bundled repository acme/pager-demo and its pull requests, served by "
                "a bundled fake gh, graded by a scripted Grader (not a model).\n")
        result = run_demo(home, backend, report=lambda line: None if json_ else say(line, err=True))
        store = ScoringStore(home)
        week = yours.listing(store)["weeks"][0]
        bugs = origins.load_all(home)
        seconds = round(time.monotonic() - started, 1)
        if json_:
            emit_json({"home": str(home.root), "run": result.run.id, "outcome": result.outcome, "summary": result.summary(),
                       "seconds": seconds, "week": week, "bug_origins": [b.key for b in bugs]})
            return
        say(f"Scoring run {result.run.id} {result.outcome}: {result.summary()}\n")
        table(["pull request", "built with", "graded by", *CRITERIA],
              [[p["key"], p["built_with"], p["grader"] or "(yours first)",
                *(("pass" if p["model"][c]["passed"] else "fail") if p["model"] else "hidden" for c in CRITERIA)]
               for p in week["pulls"]])
        for bug in bugs:
            found = bug.proposed
            say(f"\nBug origin of {bug.key} ({bug.title}): " + (
                f"{found.pull}, {found.built_with}" if found and found.pull else bug.why or bug.state))
        say(f"\nDone in {seconds} s. See it all, or score the two older ones yourself:\n"
            f"  export ASSAY_HOME={home.root}\n  assay scores acme/pager-demo#12\n"
            f"  assay scores acme/pager-demo#5 --mine\n  assay scoring-runs {result.run.id}\n"
            "  assay bug-origins\n  assay console")

    return scoring


def register(app: typer.Typer, plugins: Plugins) -> None:
    """Run a complete Experiment offline on the bundled demo suite (scripted runners, not AI)."""
    group = typer.Typer(rich_markup_mode=None, invoke_without_command=True)
    group.callback()(demo_command(plugins))
    group.command("scoring")(scoring_command(plugins))
    app.add_typer(group, name="demo")

"""``assay demo``: install the bundled suite and run demo-careful against demo-hasty, offline."""

from __future__ import annotations

import typer
from assay import hookimpl
from assay.cli.output import JsonOpt, fail
from assay.hooks.loaded import Plugins
from assay.storage.home import AssayHome
from assay.storage.records import Bar


def demo_command(plugins: Plugins):
    def demo(
        workers: int = typer.Option(2, min=1, help="Trials running at once."),
        sandbox: str = typer.Option(None, help="Sandbox backend (default: bwrap where it works, else none)."),
        json_: bool = JsonOpt,
    ) -> None:
        """Run a complete Experiment offline on the bundled demo suite (scripted runners, not AI).

        The Baseline is demo-hasty and the Candidate demo-careful: two scripted Custom runners
        on 8 small buggy projects, 3 Trials each, graded by their tests on the committed HEAD.
        """
        from assay.cli.experiment_cmd import run_plan
        from assay.engine import start
        from assay.engine.arms import ArmFlags
        from assay.plugins.demo import CAREFUL, HASTY
        from assay.plugins.demo.suite import install_demo_suite

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
            typer.echo("warning: bwrap can't run here, so the demo's Trials run without a sandbox "
                       "(`assay sandbox check` says why)", err=True)
        if not json_:
            typer.echo("The bundled demo: two scripted Custom runners (not AI agents), demo-hasty as the "
                       "Baseline and demo-careful as the Candidate.\n")
        run_plan(home, plugins, plan, workers=workers, json_=json_)

    return demo


@hookimpl
def assay_commands(app: typer.Typer, plugins: Plugins) -> None:
    app.command("demo")(demo_command(plugins))

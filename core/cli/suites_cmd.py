"""``assay suites``: list the Eval suites under ASSAY_HOME and check every manifest."""

from __future__ import annotations

import typer

from assay import evaltasks
from assay import plugin_manager as plugin_loading
from assay.cli.output import JsonOpt, emit_json, table
from assay.home import AssayHome


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    suites_app = typer.Typer(help="List and check the Eval suites under ASSAY_HOME/evals/suites.", no_args_is_help=False)
    app.add_typer(suites_app, name="suites")

    @suites_app.callback(invoke_without_command=True)
    def suites_list(ctx: typer.Context, json_: bool = JsonOpt) -> None:
        """List the Eval suites (kind, tasks, what each depends on)."""
        if ctx.invoked_subcommand is not None:
            return
        home = AssayHome.from_env()
        suites, problems = evaltasks.check_all(home, plugins.suite_kinds())
        bad = sorted({p.file.parent.name if p.file.name == evaltasks.SUITE_FILE else p.file.parent.parent.name for p in problems})
        if json_:
            emit_json([
                {"name": s.name, "kind": s.kind, "tasks": [t.name for t in s.tasks],
                 "depends_on": list(s.depends_on), "defaults": list(s.defaults),
                 "description": s.description, "valid": s.name not in bad}
                for s in suites
            ])
            return
        table(
            ["SUITE", "KIND", "TASKS", "DEPENDS ON", "STATE"],
            [(s.name, s.kind, len(s.tasks), ", ".join(s.depends_on) or "-", "invalid" if s.name in bad else "ok") for s in suites],
            empty=f"No Eval suites under {home.suites}. See docs/eval-tasks.md.",
        )
        if problems:
            typer.echo(f"{len(problems)} problem(s) in the manifests; run `assay suites check`.", err=True)

    @suites_app.command("check")
    def suites_check(json_: bool = JsonOpt) -> None:
        """Validate every suite.toml and task.toml; report every problem, exit 1 if any."""
        home = AssayHome.from_env()
        suites, problems = evaltasks.check_all(home, plugins.suite_kinds())
        if json_:
            emit_json({
                "suites": len(suites), "tasks": sum(len(s.tasks) for s in suites),
                "problems": [{"file": str(p.file), "field": p.field, "message": p.message} for p in problems],
            })
        else:
            for p in problems:
                typer.echo(str(p))
            tasks = sum(len(s.tasks) for s in suites)
            typer.echo(f"{len(suites)} suite(s), {tasks} task(s), {len(problems)} problem(s).")
        if problems:
            raise typer.Exit(1)

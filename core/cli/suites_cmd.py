"""``assay suites``: list the Eval suites under ASSAY_HOME, check every manifest, and show which
suites a change touches."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from assay.cli.output import JsonOpt, emit_json, fail, say, table
from assay.engine import touched
from assay.engine.factory import Factory, FactoryError
from assay.evaltasks import manifests
from assay.storage.git import GitError
from assay.storage.home import AssayHome

if TYPE_CHECKING:
    from assay.hooks import plugin_manager as plugin_loading  # loaded on first use (cli.PluginsOnUse)


def _arm_flag(arm: str, what: str) -> Any:
    return typer.Option(None, f"--{arm}-{what}", help=f"{what.title()} for the {arm.title()} (default: the Factory's at its commit).")


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    suites_app = typer.Typer(help="List and check the Eval suites under ASSAY_HOME/evals/suites.", no_args_is_help=False)
    app.add_typer(suites_app, name="suites")

    @suites_app.callback(invoke_without_command=True)
    def suites_list(ctx: typer.Context, json_: bool = JsonOpt) -> None:
        """List the Eval suites (kind, tasks, what each depends on)."""
        if ctx.invoked_subcommand is not None:
            return
        home = AssayHome.from_env()
        suites, problems = manifests.check_all(home, plugins.suite_kinds())
        by_name = {s.name: s for s in suites}
        of: dict[str, list[manifests.Problem]] = {}
        for p in problems:
            of.setdefault(p.file.parent.name if p.file.name == manifests.SUITE_FILE else p.file.parent.parent.name, []).append(p)
        # every suite is listed: one whose suite.toml is invalid too, with its problems (never left out)
        rows = [{"name": name, "kind": s.kind if s else None, "tasks": [t.name for t in s.tasks] if s else [],
                 "depends_on": list(s.depends_on) if s else [], "defaults": list(s.defaults) if s else [],
                 "description": s.description if s else "", "valid": name not in of,
                 **({"problems": [str(p) for p in of[name]]} if name in of else {})}
                for name in manifests.list_suite_names(home) for s in [by_name.get(name)]]
        if json_:
            emit_json(rows)
            return
        table(
            ["SUITE", "KIND", "TASKS", "DEPENDS ON", "STATE"],
            [(r["name"], r["kind"] or "?", len(r["tasks"]), ", ".join(r["depends_on"]) or "-",
              f"invalid: {len(r['problems'])} problem(s)" if not r["valid"] else "ok") for r in rows],
            empty=f"No Eval suites under {home.suites}. See docs/eval-tasks.md.",
        )
        if problems:
            say(f"{len(problems)} problem(s) in the manifests; run `assay suites check`.", err=True)

    @suites_app.command("check")
    def suites_check(json_: bool = JsonOpt) -> None:
        """Validate every suite.toml and task.toml, and say which tasks' test commands can't run on
        this host (a program not on PATH, a module it lacks); report every problem, exit 1 if any."""
        from assay.evaltasks.runnable import Toolchain

        home = AssayHome.from_env()
        suites, problems = manifests.check_all(home, plugins.suite_kinds())
        here = Toolchain()
        stuck = [(t, why) for s in suites for t in s.tasks for why in [here.why_not(t)] if why]
        if json_:
            emit_json({
                "suites": len(suites), "tasks": sum(len(s.tasks) for s in suites),
                "problems": [{"file": str(p.file), "field": p.field, "message": p.message} for p in problems],
                "cannot_run_here": [{"task": t.id, "why": why} for t, why in stuck],
            })
        else:
            for p in problems:
                say(str(p))
            for t, why in stuck:
                say(f"{t.folder / manifests.TASK_FILE}: criteria.test_command: can't run here: {why}")
            tasks = sum(len(s.tasks) for s in suites)
            say(f"{len(suites)} suite(s), {tasks} task(s), {len(problems)} problem(s)"
                + (f", {len(stuck)} task(s) can't run here." if stuck else "."))
        if problems or stuck:
            raise typer.Exit(1)

    @suites_app.command("touched")
    def suites_touched(
        baseline: str = typer.Argument(..., metavar="BASELINE", help="The Baseline: a branch or commit of the Factory."),
        candidate: str = typer.Argument(..., metavar="CANDIDATE", help="The Candidate: a branch or commit of the Factory."),
        factory: Path = typer.Option(Path("."), "--factory", help="The Factory repository (default: here)."),
        baseline_harness: Optional[str] = _arm_flag("baseline", "harness"),
        baseline_model: Optional[str] = _arm_flag("baseline", "model"),
        baseline_effort: Optional[str] = _arm_flag("baseline", "effort"),
        candidate_harness: Optional[str] = _arm_flag("candidate", "harness"),
        candidate_model: Optional[str] = _arm_flag("candidate", "model"),
        candidate_effort: Optional[str] = _arm_flag("candidate", "effort"),
        json_: bool = JsonOpt,
    ) -> None:
        """Show which suites an Experiment of BASELINE vs CANDIDATE would run, and why.

        A suite is touched when a Factory path that differs between the commits matches its
        depends_on, or when a Harness, Model or Effort default it uses differs between the Arms
        (per-Arm flags, else the Factory's assay.toml at each commit).
        """
        home = AssayHome.from_env()
        try:
            touches = touched.touched_suites(
                home, plugins.suite_kinds(), Factory.open(factory.absolute()), baseline, candidate,
                baseline_flags={"harness": baseline_harness, "model": baseline_model, "effort": baseline_effort},
                candidate_flags={"harness": candidate_harness, "model": candidate_model, "effort": candidate_effort},
            )
        except (FactoryError, GitError, manifests.ManifestError) as e:
            fail(str(e))
        names = manifests.list_suite_names(home)
        if json_:
            by_name = {t.suite: t for t in touches}
            emit_json([
                {"suite": name, "touched": name in by_name,
                 "reasons": touched.reasons_json(by_name[name]) if name in by_name else []}
                for name in names
            ])
            return
        if not names:
            say(f"No Eval suites under {home.suites}. See docs/eval-tasks.md.")
            return
        for line in touched.explain(touches, names):
            say(line)

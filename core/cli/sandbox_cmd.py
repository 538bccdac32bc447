"""``assay sandbox check``: which sandbox backends work here, which limits Trials get, and why not."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer
from assay.cli.output import JsonOpt, emit_json, say, table
from assay.hooks.protocols import SandboxBackend

if TYPE_CHECKING:
    from assay.hooks import plugin_manager as plugin_loading  # loaded on first use (cli.PluginsOnUse)

DEFAULT = "bwrap"  # what an Experiment uses unless told otherwise, wherever it works


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    sandbox = typer.Typer(help="The sandbox Trials run in.", no_args_is_help=True)
    app.add_typer(sandbox, name="sandbox")

    @sandbox.command("check")
    def check_command(json_: bool = JsonOpt) -> None:
        """Say whether bwrap works here, which limits Trials get (and which are missing), and why not.

        Exits 1 when bwrap can't run, so scripts and CI can insist on it.
        """
        rows = [_check(name, backend) for name, backend in sorted(plugins.sandbox_backends().items())]
        usable = any(r["name"] == DEFAULT and r["works"] for r in rows)
        if json_:
            emit_json({"default": DEFAULT, "default_works": usable, "backends": rows})
        else:
            table(
                ["BACKEND", "WORKS", "MEMORY CAP", "NOTE"],
                [(r["name"], "yes" if r["works"] else "no", r["memory_cap"], r["reason"] or "-") for r in rows],
                empty="No sandbox backends installed.",
            )
            for r in rows:
                for name, limit in r["limits"].items():
                    say(f"{r['name']} {name}: {'in force' if limit['in_force'] else 'MISSING'}, {limit['how']}")
            say(f"Trials run in {DEFAULT}." if usable else
                f"{DEFAULT} can't run here: an Experiment needs `--sandbox none` to run without it.")
        if not usable:
            raise typer.Exit(1)


def _check(name: str, backend: SandboxBackend) -> dict[str, Any]:
    """One backend's check; a plugin whose check raises is reported as not working, not a crash."""
    try:
        result = backend.check()
    except Exception as e:
        return {"name": name, "works": False, "reason": f"check failed: {type(e).__name__}: {e}", "memory_cap": "none",
                "limits": {}, "missing": []}
    return {
        "name": name, "works": result.works, "reason": result.reason, "memory_cap": result.memory_cap,
        "limits": {limit.name: {"in_force": limit.in_force, "how": limit.how} for limit in result.limits},
        "missing": [limit.name for limit in result.limits if not limit.in_force],
    }

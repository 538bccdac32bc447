"""``assay harnesses``: each Harness's binary, version and login; ``assay setup``: store the Claude login."""

from __future__ import annotations

from typing import Any

import typer

from assay import credentials
from assay import plugin_manager as plugin_loading
from assay.cli.output import JsonOpt, emit_json, fail, table
from assay.home import AssayHome
from assay.protocols import Harness


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    @app.command("harnesses")
    def harnesses_command(json_: bool = JsonOpt) -> None:
        """List the Harnesses: binary path, version, and whether a login is present."""
        home = AssayHome.from_env()
        rows = [_describe(name, harness, home) for name, harness in sorted(plugins.harnesses().items())]
        if json_:
            emit_json(rows)
            return
        table(
            ["HARNESS", "VERSION", "LOGIN", "BINARY"],
            [
                (r["name"], r["version"] or "-", "yes" if r["login"] else "no",
                 r["path"] or f"not installed: {r['error']}")
                for r in rows
            ],
            empty="No Harnesses installed.",
        )

    @app.command("setup")
    def setup_command() -> None:
        """Store the Claude Code login token (from `claude setup-token`) in ASSAY_HOME/credentials.toml."""
        home = AssayHome.from_env()
        token = typer.prompt("Claude Code token (from `claude setup-token`)", hide_input=True).strip()
        if not token:
            fail("no token given; nothing changed")
        credentials.put(home.credentials, credentials.CLAUDE_TOKEN, token)
        typer.echo(f"Saved the Claude Code token to {home.credentials} (mode 0600).")


def _describe(name: str, harness: Harness, home: AssayHome) -> dict[str, Any]:
    """One Harness as `assay harnesses` shows it; a missing binary is a state, not a crash."""
    row: dict[str, Any] = {"name": name, "installed": False, "path": None, "version": None,
                           "login": False, "error": None}
    try:
        binary = harness.locate()
        row.update(installed=True, path=binary.path, version=binary.version)
    except Exception as e:  # any plugin's failure to find its binary is reported, not raised
        row["error"] = str(e)
    try:
        row["login"] = harness.login_present(home.root)
    except Exception as e:
        row["error"] = row["error"] or f"login check failed: {e}"
    return row

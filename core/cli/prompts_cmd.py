"""``assay prompts``: the Session prompts and Grader prompts in force, and where each comes from."""

from __future__ import annotations

from pathlib import Path

import typer
from assay.cli.output import JsonOpt, emit_json, table
from assay.hooks import plugin_manager as plugin_loading


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    @app.command("prompts")
    def prompts(
        factory: Path = typer.Option(None, "--factory", help="A materialised Factory whose prompts override the bundled ones."),
        json_: bool = JsonOpt,
    ) -> None:
        """List the prompt files (suite kinds' Session prompts, Graders' prompts) and their inputs."""
        rows = []
        for hook in ("assay_suite_kinds", "assay_graders"):
            for name, offered in sorted(plugins.offered(hook).items()):
                for prompt in getattr(offered.value, "prompts", ()):
                    source = prompt.source(factory)
                    rows.append({"name": prompt.name, "for": f"{plugin_loading.OFFERINGS[hook]} {name}",
                                 "plugin": offered.plugin, "file": str(source), "inputs": list(prompt.inputs),
                                 "overridden": source != prompt.default})
        if json_:
            emit_json(rows)
            return
        table(["PROMPT", "FOR", "INPUTS", "FILE"],
              [(r["name"], r["for"], ", ".join(r["inputs"]), r["file"]) for r in rows])

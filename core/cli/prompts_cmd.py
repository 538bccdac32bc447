"""``assay prompts``: every prompt in force — Session prompts, the Graders', the Grader panel's and
the Scoring run's — and where each comes from."""

from __future__ import annotations

import importlib
from pathlib import Path

import typer
from assay.cli.output import JsonOpt, emit_json, table
from assay.hooks import plugin_manager as plugin_loading
from assay.storage.home import AssayHome

# The core's own prompts (module holding ``PROMPT``, what it is for), beside the plugins' ones.
CORE_PROMPTS = (("assay.pairs.panel", "the Grader panel"), ("assay.scoring.packet", "the Scoring run's Grader"),
                ("assay.scoring.origins", "the Scoring run's Bug origins"))


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    @app.command("prompts")
    def prompts(
        factory: Path = typer.Option(None, "--factory", help="A materialised Factory whose prompts override the bundled Session prompts."),
        json_: bool = JsonOpt,
    ) -> None:
        """List every prompt in force and its inputs. A Session prompt is overridden by a file of the
        same name in the Factory's prompts folder; a Grader prompt (the model Grader's, the Grader
        panel's, the Scoring run's) by one in ASSAY_HOME/prompts/."""
        home = AssayHome.from_env().root
        found = []
        for hook in ("assay_suite_kinds", "assay_graders"):
            for name, offered in sorted(plugins.offered(hook).items()):
                for prompt in getattr(offered.value, "prompts", ()):
                    found.append((prompt, f"{plugin_loading.OFFERINGS[hook]} {name}", offered.plugin))
        for module, purpose in CORE_PROMPTS:
            found.append((importlib.import_module(module).PROMPT, purpose, "assay"))
        rows = []
        for prompt, purpose, plugin in found:
            source = prompt.source(factory, home)
            rows.append({"name": prompt.name, "for": purpose, "plugin": plugin, "kind": prompt.kind,
                         "file": str(source), "inputs": list(prompt.inputs), "overridden": source != prompt.default})
        if json_:
            emit_json(rows)
            return
        table(["PROMPT", "FOR", "INPUTS", "FILE"],
              [(r["name"], r["for"], ", ".join(r["inputs"]), r["file"]) for r in rows])

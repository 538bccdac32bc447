"""The ``assay`` command line: built by :func:`make_app` from the loaded plugins.

Each command group lives in its own module with a ``register(app, plugins)`` function. Command
modules import heavy libraries (numpy, trio) inside the commands that need them, so
``assay --help`` and light commands start fast.
"""

from __future__ import annotations

import sys

import typer

import assay
from assay import formats
from assay import plugin_manager as plugin_loading
from assay.cli import output
from assay.cli import experiment_cmd, harnesses_cmd, plugins_cmd, prompts_cmd, proposals_cmd, sandbox_cmd, suites_cmd, tasks_cmd, verdict_cmd


def _version(value: bool) -> None:
    if value:
        typer.echo(f"assay {assay.__version__}")
        raise typer.Exit()


def make_app(plugins: plugin_loading.Plugins) -> typer.Typer:
    app = typer.Typer(
        name="assay",
        help="Measure a change to your AI coding agents before it ships: Baseline vs Candidate "
        "on private Eval tasks, graded blind, with a Bayesian Verdict against a Bar fixed in advance.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ) -> None:
        """Measure a change to your AI coding agents before it ships."""

    for module in (plugins_cmd, suites_cmd, verdict_cmd, experiment_cmd, harnesses_cmd, tasks_cmd, sandbox_cmd, proposals_cmd, prompts_cmd):
        module.register(app, plugins)
    plugins.manager.hook.assay_commands(app=app, plugins=plugins)
    return app


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``assay`` script."""
    plugins = plugin_loading.load()
    for info in plugins.errors:
        print(f"assay: warning: plugin '{info.name}' ({info.module}) failed to load: {info.error}", file=sys.stderr)
    app = make_app(plugins)
    try:
        app(args=argv, prog_name="assay")
    except output.UserError as e:
        print(f"assay: error: {e}", file=sys.stderr)
        sys.exit(e.code)
    except (plugin_loading.PluginError, formats.FormatError) as e:
        print(f"assay: error: {e}", file=sys.stderr)
        sys.exit(2)

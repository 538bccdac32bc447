"""Every hook a plugin can implement, in one place.

Hooks stay synchronous and only *register* things: each returns objects that satisfy a
Protocol from :mod:`assay.hooks.protocols`, and the work (often async, under trio) lives on those
objects. A plugin implements any subset; an implementation may take any subset of a hook's
arguments, so hooks can gain arguments without breaking plugins.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import typer
    from assay.hooks.loaded import Plugins
    from assay.hooks.protocols import ArmKind, Executor, Grader, Harness, Runner, SandboxBackend, SuiteKind

PROJECT = "assay"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def assay_harnesses() -> Iterable[Harness]:
    """Called once when the plugins load: the Harnesses (agent CLI adapters) this plugin offers.

    Each is keyed by its ``name``; two plugins offering the same name is an error naming both.
    """


@hookspec
def assay_suite_kinds() -> Iterable[SuiteKind]:
    """Called once when the plugins load: the Eval suite kinds this plugin offers
    (``code-review``, ``spec-review``, ``process``, …), keyed by ``name``."""


@hookspec
def assay_graders() -> Iterable[Grader]:
    """Called once when the plugins load: the Graders this plugin offers, keyed by ``name``.
    Suite kinds name the Graders their Eval tasks need."""


@hookspec
def assay_runners() -> Iterable[Runner]:
    """Called once when the plugins load: named Custom runners this plugin offers, so that
    ``--candidate-runner NAME`` finds them beside ``ASSAY_HOME/runners/NAME.toml``."""


@hookspec
def assay_arm_kinds() -> Iterable[ArmKind]:
    """Called once when the plugins load: kinds of Arm beyond a Factory commit + Harness
    (the Custom runner), keyed by ``name``; ``--baseline-runner``/``--candidate-runner`` use them."""


@hookspec
def assay_sandbox_backends() -> Iterable[SandboxBackend]:
    """Called once when the plugins load: the sandbox backends this plugin offers
    (``none`` pass-through, ``bwrap``, …), keyed by ``name``."""


@hookspec
def assay_executors() -> Iterable[Executor]:
    """Called once when the plugins load: the executors this plugin offers (``local``, the trio
    workers of this process; ``ray``, a Ray cluster's hosts), keyed by ``name``; ``--executor`` or
    the User config's ``[executor] name`` picks one."""


@hookspec
def assay_commands(app: typer.Typer, plugins: Plugins) -> None:
    """Called when the CLI is built, before it parses arguments: add sub-commands to ``app``.

    ``plugins`` is the loaded plugin set, for commands that need Harnesses, suites or backends.

    Add commands with ``app.command()`` or groups with ``app.add_typer()``; pass Typer objects
    only, never click objects (Typer vendors its own click).
    """

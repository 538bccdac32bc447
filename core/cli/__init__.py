"""The ``assay`` command line: built by :func:`make_app` from the loaded plugins.

Each command group lives in its own module with a ``register(app, plugins)`` function, and that
module is imported only when one of its commands runs (or its ``--help`` is asked for): the
root group knows every built-in command's name and one-line help from :data:`COMMANDS`, so
``assay --help`` and light commands never import the engine, trio or numpy.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import signal
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import assay
import typer
from assay.cli import output, params
from assay.sessions import interrupts
from typer.core import TyperGroup

if TYPE_CHECKING:
    from assay.hooks.loaded import Plugins

# Every built-in command: the module (in assay.cli) whose register() adds it, and its line in
# ``assay --help``. Plugins' commands (the assay_commands hook) are added after these, once a
# listing or an unknown name needs them.
COMMANDS: dict[str, tuple[str, str]] = {
    "plugins": ("plugins_cmd", "List the installed plugins, what each offers, and what broke."),
    "suites": ("suites_cmd", "List and check the Eval suites; which suites a change touches."),
    "tasks": ("tasks_cmd", "Work with single Eval tasks (SUITE/TASK), or import public ones."),
    "proposals": ("proposals_cmd", "List the proposed Eval tasks waiting for approval."),
    "approve": ("proposals_cmd", "Validate a proposed Eval task and move it into its suite."),
    "prompts": ("prompts_cmd", "List the prompt files in force and where each comes from."),
    "harnesses": ("harnesses_cmd", "List the Harnesses (binary, version, login); check them live."),
    "setup": ("harnesses_cmd", "Store a Harness's login for sessions (a token, a key, or Kimi Code's own login)."),
    "sandbox": ("sandbox_cmd", "The sandbox Trials run in: which backends work here."),
    "evals": ("experiment_cmd", "Prepare what Experiments run on."),
    "experiment": ("experiment_cmd", "Compare the Baseline and the Candidate on Eval suites."),
    "experiments": ("experiment_cmd", "List Experiments, or show one with every Trial."),
    "stop": ("experiment_cmd", "Stop a running Experiment; nothing is left running."),
    "inbox": ("experiment_cmd", "Commands that need you, and those that are done."),
    "recheck": ("experiment_cmd", "Record your recheck of a Trial's Score."),
    "release-check": ("release_cmd", "Before a release: run its Experiment, wait for a final Verdict, say if it may ship."),
    "review": ("review_cmd", "Review a pair of process Trials blind: merge calls, then a preference."),
    "verdict": ("verdict_cmd", "Compute a Verdict from per-task pass counts."),
    "score": ("scoring_cmd", "Start a Scoring run: grade a sample of merged pull requests blind."),
    "scoring-runs": ("scoring_cmd", "List the Scoring runs, or show one: what it drew and what became of each."),
    "scores": ("scoring_cmd", "List each week's sample and its Scores, or show one pull request's."),
    "bug-origins": ("scoring_cmd", "List Bug origins; confirm, correct or reject one."),
    "console": ("console_cmd", "Serve the Console: Experiments live, Scores and Bug origins, in a browser."),
    "built-with": ("scoring_cmd", "Print the Built-with line for a pull request a session made."),
    "cron-jobs": ("cron_cmd", "List the crontab lines that run assay: next run, last run, late or not."),
    "traces": ("traces_cmd", "Session traces (OTLP): send an Experiment's or a Scoring run's to a collector."),
}


class PluginsOnUse:
    """The installed plugins, loaded the first time something reads them.

    ``assay --version``, a built-in command's ``--help`` and the commands that need no plugin
    (``assay verdict``) then import none: loading them all costs more than typer's own start-up.
    A plugin that failed to load is reported once, when they load.
    """

    def __init__(self) -> None:
        self._plugins: Plugins | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # a probe for a protocol (abc's __isabstractmethod__ …): not a use
            raise AttributeError(name)
        return getattr(self.loaded(), name)

    def loaded(self) -> Plugins:
        if self._plugins is None:
            from assay.hooks import plugin_manager

            self._plugins = plugin_manager.load()
            for info in self._plugins.errors:
                output.say(f"assay: warning: plugin '{info.name}' ({info.module}) failed to load: {info.error}", err=True)
        return self._plugins


class Interrupted(BaseException):
    """A Ctrl-C out of parsing or a command, carried past Typer (which turns a KeyboardInterrupt
    into a silent exit 130) to :func:`main`, which says so in one line."""


@contextlib.contextmanager
def _carry_interrupts() -> Iterator[None]:
    try:
        yield
    except BaseException as e:
        if _interrupted(e):
            raise Interrupted() from e
        raise


class LazyGroup(TyperGroup):
    """The root group: built-in commands are listed from :data:`COMMANDS` and loaded on use;
    plugins' commands are listed from their declarations (:mod:`assay.hooks.declared`) and their
    plugin imported only when one runs. The ``assay_commands`` hook is asked only for a name
    neither knows, or for a listing when ``ASSAY_PLUGINS`` names modules (they declare nothing).
    A Ctrl-C while it parses or runs a command reaches :func:`main` as :class:`Interrupted`."""

    plugins: Plugins  # set on the subclass that make_app builds
    _with_plugin_commands = False

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _carry_interrupts():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: typer.Context) -> Any:
        with _carry_interrupts():
            return super().invoke(ctx)

    def list_commands(self, ctx: typer.Context) -> list[str]:
        from assay.hooks import declared

        if declared.env_modules():  # not installed, so they declare no command: ask them
            self._add_plugin_commands()
        listed = [*COMMANDS, *(name for name in declared.commands() if name not in COMMANDS)]
        return [*listed, *(name for name in self.commands if name not in listed)]

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name in COMMANDS:
            module = importlib.import_module(f"assay.cli.{COMMANDS[cmd_name][0]}")
            self._add(lambda app: module.register(app, self.plugins))
            return self.commands.get(cmd_name)
        from assay.hooks import declared

        if cmd_name in declared.commands():
            ep = declared.commands()[cmd_name]
            try:
                register = ep.load()
            except Exception as e:  # a broken plugin: one line, as `assay plugins` reports it
                output.fail(f"the command '{cmd_name}' ({ep.value}) failed to load: {type(e).__name__}: {e}", code=1)
            self._add(lambda app: register(app, self.plugins))
        else:
            self._add_plugin_commands()
        return self.commands.get(cmd_name)

    def _add_plugin_commands(self) -> None:
        """Commands plugins add through the assay_commands hook instead of declaring them."""
        if not self._with_plugin_commands:
            self._with_plugin_commands = True
            self._add(lambda app: self.plugins.manager.hook.assay_commands(app=app, plugins=self.plugins))

    def _add(self, register: Any) -> None:
        app = typer.Typer(rich_markup_mode=None)
        register(app)
        app.callback()(lambda: None)  # a callback makes it a group even with one command
        for name, command in typer.main.get_group(app).commands.items():
            self.commands.setdefault(name, command)

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> Any:
        # Typer suggests only among loaded commands; suggest among every command's name instead.
        if args and not args[0].startswith("-") and args[0] not in COMMANDS and args[0] not in self.list_commands(ctx):
            close = difflib.get_close_matches(args[0], self.list_commands(ctx))
            if close:
                ctx.fail(f"No such command {args[0]!r}. Did you mean {', '.join(map(repr, close))}?")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: typer.Context, formatter: Any) -> None:  # Typer's own (vendored) click
        from assay.hooks import declared

        rows = []
        for name in self.list_commands(ctx):
            if name in COMMANDS:
                rows.append((name, COMMANDS[name][1]))
            elif name in declared.commands() and name not in self.commands:
                rows.append((name, declared.help_line(declared.commands()[name].value)))
            elif not self.commands[name].hidden:
                rows.append((name, self.commands[name].get_short_help_str(formatter.width)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _version(value: bool) -> None:
    if value:
        output.say(f"assay {assay.__version__}")
        raise typer.Exit()


def make_app(plugins: Plugins | PluginsOnUse) -> typer.Typer:
    """The root command: its table and ``--version`` need no plugin; commands get ``plugins``."""
    params.install()
    app = typer.Typer(
        name="assay",
        cls=type("AssayGroup", (LazyGroup,), {"plugins": plugins}),
        help="Measure a change to your AI coding agents before it ships: Baseline vs Candidate "
        "on private Eval tasks, graded blind, with a Bayesian Verdict against a Bar fixed in advance.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},  # every command's context inherits it
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ) -> None:
        """Measure a change to your AI coding agents before it ships."""
        _command_takes_ctrl_c()

    return app


def _command_takes_ctrl_c() -> None:
    """The command is about to begin (its module is imported, its name resolved): from here a
    Ctrl-C is a KeyboardInterrupt again (noted first, so none is lost: :mod:`assay.sessions.interrupts`),
    which the command (the engine: a Stop) or :func:`main` (one line, exit 130) takes, instead of
    ``assay.__main__``'s end at once."""
    handler = signal.getsignal(signal.SIGINT)
    if getattr(handler, "assay_start_up", False) or handler is signal.default_int_handler:  # not if ignored
        interrupts.keep()


def _is_input_error(e: Exception) -> bool:
    """A plugin or file-format error: the user's input, reported in one line. The plugin loader and
    the formats module (and cattrs) are only loaded by commands that use them, so look for them,
    don't import them."""
    loaded: Any = sys.modules.get("assay.hooks.loaded")
    formats: Any = sys.modules.get("assay.storage.formats")
    return ((loaded is not None and isinstance(e, loaded.PluginError))
            or (formats is not None and isinstance(e, formats.FormatError)))


EXIT_INTERRUPTED = 130


def _interrupted(e: BaseException) -> bool:
    """A Ctrl-C, alone or inside an exception group (trio's nurseries gather them)."""
    return isinstance(e, (KeyboardInterrupt, Interrupted)) or (
        isinstance(e, BaseExceptionGroup) and all(_interrupted(x) for x in e.exceptions))


def _is(e: BaseException, name: str) -> bool:
    """Whether ``e`` is click's exception ``name`` (Typer vendors its own click: matched by name)."""
    return any(c.__name__ == name for c in type(e).__mro__)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``assay`` script: every error one line (``assay: error: …``, typer's own
    usage errors too), and Ctrl-C before a command takes it over a clean exit 130, never a traceback."""
    try:
        code = make_app(PluginsOnUse())(args=argv, prog_name="assay", standalone_mode=False)
    except output.UserError as e:
        output.print_error(str(e))
        sys.exit(e.code)
    except Exception as e:
        _report(e)
    except BaseException as e:
        if not _interrupted(e):
            raise
        print("assay: stopped (Ctrl-C); nothing is left running", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    if isinstance(code, int) and code:
        sys.exit(code)


def _report(e: Exception) -> None:
    """Any other exception out of a command: a usage or input error in one line (and its exit
    code), or raised again as the bug it is."""
    if _is(e, "NoArgsIsHelpError"):
        e.show()  # type: ignore[attr-defined]
        sys.exit(e.exit_code)  # type: ignore[attr-defined]
    if _is(e, "ClickException"):  # a usage error: one line, with where to read more
        ctx = getattr(e, "ctx", None)
        more = f" (see `{ctx.command_path} --help`)" if ctx is not None and _is(e, "UsageError") else ""
        output.print_error(f"{e.format_message()}{more}")  # type: ignore[attr-defined]
        sys.exit(e.exit_code)  # type: ignore[attr-defined]
    if _is(e, "Abort"):  # Ctrl-C (or end of input) inside a command's prompt
        print("\nassay: stopped (Ctrl-C); nothing is left running", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    if not _is_input_error(e):
        raise e
    output.print_error(str(e))
    sys.exit(2)

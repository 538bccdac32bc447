"""Issue 37: "Ctrl-C in the first seconds exits cleanly as the docs promise, never a traceback"
(docs/experiments.md: "A Ctrl-C before the run has begun (while assay starts, plans or probes the
Arms) exits 130 at once, with nothing recorded and nothing left running").

Each Ctrl-C here lands at an event, not after a sleep: Python reports each import statement's
module as it ends (PYTHONPROFILEIMPORTTIME; importlib.import_module's, such as a command's module,
aren't reported, so their first imports stand for them), and the SIGINT is sent as the named
module's line arrives, so it falls among the next imports. (`tests/cli/test_cli_forms.py` sends it at moments after the plan is
announced.) Before `assay.__main__` runs, the moment is Python's own: docs/experiments.md says what
happens then."""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile

import pytest

from tests.conftest import cli_env
from tests.experiment_fixtures import PLUGINS, make_factory, make_suite, scenario

STOPPED = "assay: stopped (Ctrl-C); nothing is left running"


def interrupted_after(module: str, args: list[str], env: dict[str, str], **popen) -> tuple[int, list[str], str]:
    """Run ``assay ARGS``, send SIGINT as Python reports ``module`` imported; its exit code, its
    stderr's lines but the import reports, and its stdout (in a file: stderr is read to its end
    here, line by line, with nothing left in a buffer)."""
    seen, sent = [], False
    with tempfile.TemporaryFile("w+") as stdout:
        with subprocess.Popen([sys.executable, "-m", "assay", *args], env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
                              stdout=stdout, stderr=subprocess.PIPE, text=True, **popen) as proc:
            try:
                for line in proc.stderr:
                    seen.append(line)
                    if not sent and line.startswith("import time:") and line.rsplit("|", 1)[-1].strip() == module:
                        proc.send_signal(signal.SIGINT)
                        sent = True
                proc.wait(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
        stdout.seek(0)
        out = stdout.read()
    assert sent, f"assay {' '.join(args)} never imported {module}: {''.join(seen)[-2000:]}"
    return proc.returncode, [line.rstrip("\n") for line in seen if not line.startswith("import time:")], out


@pytest.mark.parametrize("module", ["typer", "assay.cli.output", "assay.cli", "pluggy", "assay.hooks.plugin_manager",
                                    "assay.plugins.harness_claude.command"])
def test_ctrl_c_while_help_imports_exits_130_in_one_line(assay_home, module):
    """`assay --help` imports typer, the CLI, pluggy and every plugin (to list their commands)."""
    code, lines, out = interrupted_after(module, ["--help"], cli_env(assay_home, PLUGINS))
    assert (code, lines) == (130, [STOPPED]), (code, lines)
    assert "Usage" not in out


@pytest.mark.parametrize("module", ["assay.cli", "assay.cli.experiment_records", "assay.engine.results",
                                    "assay.engine.start", "trio"])
def test_ctrl_c_while_an_experiment_starts_exits_130_in_one_line_and_records_nothing(assay_home, tmp_path, module):
    """From the CLI's import, through the command's module (its imports: the records, the results)
    to the engine's once the command has begun (the planner, trio), before the plan is announced."""
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=1)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:30,right"}})
    env = cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc))
    code, lines, out = interrupted_after(
        module, ["experiment", "change", "--factory", str(factory), "--suite", "fixture", "--sandbox", "none"], env)
    assert (code, lines) == (130, [STOPPED]), (code, lines, out)
    assert not list(assay_home.glob("experiments/*")) and not list(assay_home.glob("commands/**/*.json"))


def test_started_with_ctrl_c_ignored_it_stays_ignored(assay_home):
    """A shell starts a background job with SIGINT ignored; assay's start-up handling keeps it so."""
    code, lines, out = interrupted_after("assay.cli", ["--help"], cli_env(assay_home, PLUGINS),
                                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert (code, lines) == (0, []) and "Usage" in out

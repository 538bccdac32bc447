"""What a command imports: each command's module only when it runs (the layout issue), so
``assay --help`` and ``assay verdict`` never pay for the engine, trio or the sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli_env

HEAVY = ("trio", "numpy", "cattrs", "assay.engine", "assay.plugins.sandbox_bwrap.backend",
         "assay.plugins.sandbox_none.backend", "assay.scripted_provider", "assay.harnesscheck")


def modules_loaded_by(assay_home: Path, *args: str) -> tuple[set[str], str]:
    """Run the CLI in a fresh process as ``assay ARGS`` does and list what it imported."""
    code = (
        "import sys\n"
        "from assay.cli import main\n"
        f"sys.argv = ['assay', *{list(args)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('MODULES', ' '.join(sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(assay_home), timeout=60)
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:]), done.stdout


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)}


def plugin_modules(modules: set[str]) -> set[str]:
    """The plugin machinery and any plugin: pluggy, the loader, the plugins' own modules."""
    return {m for m in modules if m.startswith(("assay.plugins.", "assay.hooks.", "pluggy"))}


def test_help_imports_no_engine_trio_numpy_or_sandbox(assay_home: Path) -> None:
    modules, out = modules_loaded_by(assay_home, "--help")
    assert "experiment" in out and "verdict" in out  # every command is still listed
    assert "demo" in out  # and so is a plugin's command (the demo plugin's)
    assert "assay.cli" in modules
    assert heavy(modules) == set()
    assert not any(m.startswith("assay.cli.") and m.endswith("_cmd") for m in modules)


def test_version_loads_no_plugin_and_no_attrs(assay_home: Path) -> None:
    """Issue 39: "the root command table, help and version load no plugin, no attrs/cattrs"."""
    modules, out = modules_loaded_by(assay_home, "--version")
    assert out.strip() == "assay 0.1.0"
    assert plugin_modules(modules) == set()
    assert not {m for m in modules if m.startswith(("attr", "cattrs"))}
    assert heavy(modules) == set()


def test_a_command_imports_only_its_own_module(assay_home: Path) -> None:
    modules, out = modules_loaded_by(assay_home, "plugins", "--json")
    assert json.loads(out)  # the command ran
    assert {m for m in modules if m.endswith("_cmd")} == {"assay.cli.plugins_cmd"}
    assert not {m for m in modules if m.startswith("assay.engine")}


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_verdict_needs_numpy_but_not_the_engine_or_trio(assay_home: Path, tmp_path: Path, extra: list[str]) -> None:
    counts = tmp_path / "counts.json"
    counts.write_text(json.dumps({"trials_per_task": 1, "tasks": [{"id": f"t{i}", "baseline": 1, "candidate": 1} for i in range(10)]}))
    modules, out = modules_loaded_by(assay_home, "verdict", str(counts), *extra)
    assert "inconclusive" in out or "pass" in out
    assert "numpy" in modules
    assert plugin_modules(modules) == set()  # issue 39: "plugins are loaded only by commands that use them"
    assert heavy(modules) - {m for m in modules if m == "numpy" or m.startswith(("numpy.", "cattrs"))} == set()


def test_a_mistyped_command_is_still_suggested(cli) -> None:
    done = cli("experimnet")
    assert done.returncode == 2
    assert "Did you mean 'experiment'" in done.stderr


@pytest.mark.slow
def test_every_listed_command_loads_and_helps(cli) -> None:
    from assay.cli import COMMANDS

    for name in COMMANDS:
        done = cli(name, "--help")
        assert done.returncode == 0, (name, done.stderr)
        assert f"assay {name}" in done.stdout

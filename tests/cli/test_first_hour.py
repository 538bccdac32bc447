"""A new user's first hour (issue 17, part 2): the CLI runs on the dependencies a fresh venv
resolves today, and CI runs the README's test command the way that user does."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import cli_env

REPO = Path(__file__).resolve().parents[2]


def test_the_cli_runs_without_a_separate_click(assay_home: Path) -> None:
    """Typer 0.26+ carries its own click and no longer installs `click`, so a fresh venv has none:
    ``assay`` must not import it (it did, so `assay --help` failed with ModuleNotFoundError)."""
    code = ("import sys; sys.modules['click'] = None\n"  # `import click` now raises, as in a fresh venv
            "from assay.cli import main\nmain(['experimnt'])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=cli_env(assay_home), timeout=60)
    assert "ModuleNotFoundError" not in done.stderr and "ImportError" not in done.stderr, done.stderr
    assert done.returncode == 2
    assert "Did you mean 'experiment', 'experiments'?" in done.stderr


def test_typer_is_not_pinned_to_an_old_release() -> None:
    """Finding: typer was pinned below 0.26 for start-up time; the lazy command modules win that
    back, so the constraint must allow the current release (no upper bound)."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    typer = next(d for d in deps if re.match(r"typer\b", d))
    assert "<" not in typer, typer


def test_ci_runs_the_readme_test_command_in_a_fresh_venv() -> None:
    """Acceptance: `.ci/run` builds a fresh venv and runs the README's test command in it
    (it used to `pip install` into whatever Python ran it)."""
    readme = (REPO / "README.md").read_text()
    command = re.search(r"Install and run the tests:\s*```sh\n(.+?)\n```", readme).group(1)
    ci = (REPO / ".ci" / "run").read_text()
    lines = [line.strip() for line in ci.splitlines()]
    venv = next(i for i, line in enumerate(lines) if re.search(r"-m venv ", line))
    activate = next(i for i, line in enumerate(lines) if re.search(r"(source|\.) \"?\$venv\"?/bin/activate", line))
    assert venv < activate < lines.index(command) == len(lines) - 1  # last: its exit code is CI's
    assert "Python 3.11" in readme  # the README says which Python versions are tested

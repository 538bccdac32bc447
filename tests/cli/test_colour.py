"""Issue 37: nothing was coloured anywhere, though rich already drew the progress line. On a
terminal the Verdict's word and a table's pass/fail/inconclusive are in colour and its header bold,
by rich; under NO_COLOR (no-color.org) and whenever output isn't a terminal, plain text."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import cli_env, run_cli
from tests.experiment_fixtures import PLUGINS, experiment, make_factory, make_suite, scenario
from tests.terminal import on_terminal

GREEN, RED, YELLOW, BOLD = "\x1b[1;32m", "\x1b[1;31m", "\x1b[1;33m", "\x1b[1m"


@pytest.mark.slow
def test_verdicts_are_coloured_on_a_terminal_only(assay_home: Path, tmp_path: Path):
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=2)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "wrong"}})
    done = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    exp = json.loads(done.stdout.splitlines()[-1])["id"]
    env = cli_env(assay_home, PLUGINS)
    code, shown = on_terminal([sys.executable, "-m", "assay", "experiments", exp], env, term="xterm")
    assert code == 0, shown
    assert f"Verdict: {YELLOW}inconclusive\x1b[0m" in shown or f"Verdict: {RED}fail\x1b[0m" in shown, repr(shown)
    assert f"{GREEN}pass\x1b[0m" in shown and f"{RED}fail\x1b[0m" in shown, "the Scores in the Trial table"
    assert f"{BOLD}TASK" in shown, "the header"
    code, listed = on_terminal([sys.executable, "-m", "assay", "experiments"], env, term="xterm")
    assert code == 0 and "\x1b[1;3" in listed and "STARTED" in listed
    for plain in (on_terminal([sys.executable, "-m", "assay", "experiments", exp], {**env, "NO_COLOR": "1"},
                              term="xterm")[1],
                  run_cli(assay_home, "experiments", exp, plugins=PLUGINS).stdout):
        assert "\x1b[" not in plain and "Verdict: " in plain

"""Issue 37: the next step is always possible from the tool. A changed margin or an edited Eval
task left the user moving folders inside ASSAY_HOME (the error even suggested `mv …`); now the
refusal names the exact command that starts an Experiment afresh beside the old one (`--label`,
or `--new` for the next free label), the listing sorts newest first with when each started, and
a plain Experiment prints its estimate and asks on a terminal before it spends (1944 P2)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.conftest import cli_env, run_cli
from tests.experiment_fixtures import PLUGINS, experiment, make_factory, make_suite, scenario
from tests.terminal import on_terminal


@pytest.mark.slow
def test_a_changed_margin_is_refused_with_the_command_that_starts_afresh(assay_home, tmp_path):
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=2)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}})
    first = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert first.returncode == 0, first.stderr
    old = json.loads(first.stdout.splitlines()[-1])["id"]

    refused = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--margin", "0.2")
    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert "the Bar was recorded before its first Trial and can't change (margin: recorded 0.1, now 0.2)" in line
    assert "mv " not in line
    command = line.split("run: ", 1)[1]
    assert command.endswith("--margin 0.2 --label 2")

    again = run_cli(assay_home, *shlex.split(command)[1:], "--json", plugins=PLUGINS, FAKE_SCENARIO=str(sc))
    assert again.returncode == 0, again.stderr
    fresh = json.loads(again.stdout.splitlines()[-1])["id"]
    assert fresh != old
    rows = json.loads(run_cli(assay_home, "experiments", "--json", plugins=PLUGINS).stdout)
    assert [(r["id"], r["label"]) for r in rows] == [(fresh, "2"), (old, None)], "newest first, labelled"
    assert json.loads((assay_home / "evals" / "experiments" / fresh / "bar.json").read_text())["margin"] == 0.2
    listed = run_cli(assay_home, "experiments", plugins=PLUGINS).stdout.splitlines()
    assert listed[0].split()[:3] == ["ID", "LABEL", "STARTED"] and listed[1].startswith(f"{fresh}  2 ")

    resumed = run_cli(assay_home, *shlex.split(command)[1:], "--json", plugins=PLUGINS, FAKE_SCENARIO=str(sc))
    assert json.loads(resumed.stdout.splitlines()[-1])["id"] == fresh, "the same label resumes the same Experiment"
    newer = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--new", "--json")
    assert newer.returncode == 0, newer.stderr
    assert json.loads(run_cli(assay_home, "experiments", "--json", plugins=PLUGINS).stdout)[0]["label"] == "3"
    both = experiment(assay_home, factory, sc, "--new", "--label", "x")
    assert both.returncode == 2 and both.stderr.count("\n") == 1


@pytest.mark.slow
def test_the_estimate_is_printed_and_a_terminal_is_asked_before_the_first_trial(assay_home, tmp_path):
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=2)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}})
    argv = [sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory), "--suite", "fixture",
            "--sandbox", "none"]
    env = cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc))
    code, text = on_terminal(argv, env, answers=[(b"Start 8 Trials? [y/N]", "n")])
    assert code == 0, text
    assert "Expected spend" in text and "4 Trials, 4 session(s), minutes unknown" in text
    assert "Not started; nothing recorded" in text
    assert not list((assay_home / "evals" / "experiments").glob("*/bar.json")), "nothing was recorded"

    code, text = on_terminal([*argv, "--yes"], env)
    assert code == 0 and "[y/N]" not in text and "Verdict: " in text, text
    piped = experiment(assay_home, factory, sc, "--candidate-model", "other")
    assert piped.returncode == 0 and "[y/N]" not in piped.stdout, "not a terminal: no question"
    assert "from 8 earlier Trials" in piped.stdout and "about 0" in piped.stdout, piped.stdout

"""Issue 22, whole-CLI: extending an inconclusive Experiment is a recorded act, each look is judged
by the Bar's look rule, and a kill -9 between looks loses nothing. Fake Harness sessions run as
real subprocesses (tests/fakes/fake_agent.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from assay.storage.records import Bar
from assay.verdict import TaskPair, verdict_at_look

from tests.conftest import cli_env, run_cli
from tests.experiment_fixtures import PLUGINS, experiment, make_factory, make_suite, scenario


@pytest.fixture
def world(tmp_path: Path, assay_home: Path):
    """A 4-task suite the Experiment starts on, and a 20-task suite to extend it from; the
    Candidate answers wrong on t1 and on every extra task, the Baseline always right."""
    factory = make_factory(tmp_path)
    make_suite(assay_home)
    more = make_suite(assay_home, tasks=20, name="more")
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"},
                                        "bad": {"fixture/t1": "wrong", **{t: "wrong" for t in more}, "*": "right"}})
    return factory, more, sc


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def extend(home: Path, sc: Path, exp_id: str, tasks: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(home, "experiment", exp_id, "--add-tasks", ",".join(tasks), *args, plugins=PLUGINS,
                   FAKE_SCENARIO=str(sc))


def shown(home: Path, exp_id: str) -> dict:
    return json.loads(run_cli(home, "experiments", exp_id, "--json", plugins=PLUGINS).stdout)


def documented(data: dict) -> object:
    """The Verdict docs/verdict.md describes, computed from what `assay experiments --json` shows."""
    added_at = {t["id"]: look["number"] for look in data["looks"] for t in look["added"]}
    pairs = [TaskPair(t["task"], t["baseline"], t["candidate"]) for t in data["tasks"]]
    bar = Bar(**{k: v for k, v in data["bar"].items() if k != "model_graders"})
    return verdict_at_look(pairs, trials_per_task=2, bar=bar, look=len(data["looks"]), added_at=added_at,
                           sequence_from=bar.sequence_from)


@pytest.mark.slow
def test_an_inconclusive_experiment_extended_twice_with_a_kill_between_looks(world, assay_home: Path):
    """Acceptance: extended twice, killed (-9) during the second look and resumed by the same
    command, the Experiment ends with the documented Verdict; every look is recorded (when, how
    many tasks, its interval) and output and --json name the look and which interval decided."""
    factory, more, sc = world
    first = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert first.returncode == 0, first.stderr
    line = last_json(first.stdout)
    assert line["verdict"] == "inconclusive" and "look" not in line  # a one-look line is as it always was
    exp_id = line["id"]
    assert (shown(assay_home, exp_id)["verdict"]["look"], shown(assay_home, exp_id)["verdict"]["decided_by"]) == (
        1, "credible interval")
    text = run_cli(assay_home, "experiments", exp_id, plugins=PLUGINS).stdout
    assert "Look 1: decided by the credible interval" in text
    assert "would settle it at look 2" in text and f"assay experiment {exp_id} --add-tasks" in text

    # Look 2: killed while its Trials run, then the same command resumes it.
    argv = [sys.executable, "-m", "assay", "experiment", exp_id, "--add-tasks", ",".join(more[:6]), "--json"]
    proc = subprocess.Popen(argv, env=cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    folder = assay_home / "evals" / "experiments" / exp_id
    deadline = time.monotonic() + 60
    while not list(folder.glob("trials/more__*/*/attempt-*/trial.json")):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr and proc.stderr.read()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    looks = json.loads((folder / "looks.json").read_text())["looks"]
    assert [look["number"] for look in looks] == [1, 2] and looks[1]["tasks"] == 10 and looks[1]["verdict"] is None
    early = extend(assay_home, sc, exp_id, more[6:])  # look 2 must end before look 3 starts
    assert early.returncode == 2
    assert f"no Verdict at look 2 yet: finish that look before adding tasks (`assay experiment {exp_id} --add-tasks" \
        in early.stderr
    assert looks[0]["verdict"] == "inconclusive" and looks[0]["decided_by"] == "credible interval"
    resumed = extend(assay_home, sc, exp_id, more[:6], "--json")
    assert resumed.returncode == 0, resumed.stderr
    second = last_json(resumed.stdout)
    assert (second["verdict"], second["look"], second["decided_by"]) == ("inconclusive", 2, "confidence sequence")

    # Look 3.
    third = extend(assay_home, sc, exp_id, more[6:])
    assert third.returncode == 0, third.stderr
    assert "Look 3: 14 Eval tasks added" in third.stdout
    assert "Look 3: decided by the confidence sequence, valid at every look." in third.stdout

    data = shown(assay_home, exp_id)
    expected = documented(data)
    assert data["verdict"]["verdict"] == expected.verdict == "fail"
    assert data["verdict"]["interval"] == list(expected.interval)
    assert (data["verdict"]["look"], data["verdict"]["decided_by"]) == (3, "confidence sequence")
    record = json.loads((assay_home / "logs" / "experiment" / f"{exp_id}.json").read_text())
    assert record["outcome"] == "fail" and record["summary"].startswith("Verdict fail at look 3, interval")
    assert [(look["number"], look["tasks"], look["verdict"]) for look in data["looks"]] == [
        (1, 4, "inconclusive"), (2, 10, "inconclusive"), (3, 24, "fail")]
    assert all(look["at"] and look["interval"] for look in data["looks"])
    # Every Trial of look 1 was kept, not run again: one attempt each.
    attempts = list(folder.glob("trials/fixture__*/*/attempt-*"))
    assert len(attempts) == 4 * 2 * 2

    # The command that started it reports the same Verdict, and a fail is final.
    again = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert again.returncode == 0, again.stderr
    assert (last_json(again.stdout)["verdict"], last_json(again.stdout)["look"]) == ("fail", 3)
    final = extend(assay_home, sc, exp_id, ["fixture/t2"])
    assert final.returncode == 2
    assert "ended in a fail at look 3: only an inconclusive Experiment can be extended" in final.stderr


@pytest.mark.slow
def test_a_changed_look_rule_is_refused_like_any_changed_bar(world, assay_home: Path):
    """Acceptance: the rule is part of the Bar, recorded before the first Trial; changing it is
    refused, by the starting command or by --add-tasks, and a one-look Bar can't be extended."""
    factory, more, sc = world
    first = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--look-rule", "one-look", "--json")
    assert first.returncode == 0, first.stderr
    exp_id = last_json(first.stdout)["id"]
    bar = json.loads((assay_home / "evals" / "experiments" / exp_id / "bar.json").read_text())
    assert bar["look_rule"] == "one-look" and bar["format"] == Bar.FORMAT
    changed = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--look-rule", "confidence-sequence")
    assert changed.returncode == 2
    assert "can't change (look_rule: recorded 'one-look', now 'confidence-sequence')" in changed.stderr
    by_id = extend(assay_home, sc, exp_id, more[:2], "--look-rule", "confidence-sequence")
    assert by_id.returncode == 2 and "look_rule: recorded 'one-look'" in by_id.stderr
    refused = extend(assay_home, sc, exp_id, more[:2])
    assert refused.returncode == 2 and "look rule is one-look, so it can't be extended" in refused.stderr
    text = run_cli(assay_home, "experiments", exp_id, plugins=PLUGINS).stdout  # its advice plans a new one
    assert "this Experiment's Bar allows one look, so plan a new Experiment with them (" in text
    assert "under a look rule that can extend (--look-rule confidence-sequence, the default)" in text
    assert "--add-tasks" not in text and "at look 2" not in text
    looks = json.loads((assay_home / "evals" / "experiments" / exp_id / "looks.json").read_text())["looks"]
    assert [look["number"] for look in looks] == [1]


@pytest.mark.slow
def test_under_confidence_sequence_only_every_look_says_the_sequence_decided(world, assay_home: Path):
    """The look rule ``confidence-sequence-only`` (docs/verdict.md): the first look is judged by the
    interval valid at every look too, and the output and the --json line say so from look 1."""
    factory, more, sc = world
    args = ("--candidate-model", "bad", "--look-rule", "confidence-sequence-only")
    first = experiment(assay_home, factory, sc, *args)
    assert first.returncode == 0, first.stderr
    assert ("the chance of a clear Verdict if the Arms are equal is 0% at look 1, judged by the confidence "
            "sequence (plan to extend).") in first.stdout
    again = experiment(assay_home, factory, sc, *args, "--json")  # the same command reports the same Verdict
    line = last_json(again.stdout)
    assert (line["verdict"], line["look"], line["decided_by"]) == ("inconclusive", 1, "confidence sequence")
    exp_id = line["id"]
    text = run_cli(assay_home, "experiments", exp_id, plugins=PLUGINS).stdout
    assert "Look 1: decided by the confidence sequence, valid at every look." in text
    assert "would settle it at look 2" in text
    second = extend(assay_home, sc, exp_id, more[:6], "--json")
    assert second.returncode == 0, second.stderr
    data = shown(assay_home, exp_id)
    assert data["bar"]["look_rule"] == "confidence-sequence-only"
    expected = documented(data)
    assert (data["verdict"]["verdict"], data["verdict"]["interval"]) == (expected.verdict, list(expected.interval))
    assert (last_json(second.stdout)["look"], last_json(second.stdout)["decided_by"]) == (2, "confidence sequence")


@pytest.mark.slow
def test_bad_extensions_are_one_line_and_write_nothing(world, assay_home: Path):
    factory, more, sc = world
    first = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    exp_id = last_json(first.stdout)["id"]
    looks = assay_home / "evals" / "experiments" / exp_id / "looks.json"
    before = looks.read_text()
    for tasks, message in ((["fixture/t2"], "already has this Eval task"),
                           (["more/nope"], "suite 'more' has no task 'nope'"),
                           (["nosuite/t1"], "--add-tasks nosuite/t1:"),
                           (["t1"], "name an Eval task as SUITE/TASK")):
        result = extend(assay_home, sc, exp_id, tasks)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert looks.read_text() == before
    no_id = run_cli(assay_home, "experiment", "--add-tasks", "more/t1", plugins=PLUGINS)
    assert no_id.returncode == 2 and "name it" in no_id.stderr


@pytest.mark.slow
def test_the_output_says_when_more_looks_cannot_help(tmp_path: Path, assay_home: Path):
    """With no margin, equal Arms can never pass (the interval would have to clear zero) nor fail:
    the advice says more looks are unlikely to settle it instead of giving a number."""
    factory = make_factory(tmp_path)
    make_suite(assay_home)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "right"}})
    result = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--margin", "0")
    assert result.returncode == 0, result.stderr
    assert "more looks are unlikely to settle it: even 1000 more Eval tasks give a" in result.stdout
    assert "would settle it" not in result.stdout

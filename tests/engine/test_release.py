"""Release mode, whole-CLI, on a fixture Factory with release tags (issue 19; spec 977 user
stories 5 and 50-55): ``assay experiment --release`` and ``assay release-check``."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.conftest import cli_env, run_cli, wait_for
from tests.experiment_fixtures import (
    PLUGINS,
    git,
    make_released_factory,
    make_suite,
    scenario,
)
from tests.terminal import on_terminal as terminal


@pytest.fixture
def released(tmp_path: Path, assay_home: Path) -> tuple[Path, dict[str, str]]:
    ids = make_released_factory(tmp_path)
    make_suite(assay_home)  # "fixture": depends on skills/**
    make_suite(assay_home, tasks=1, name="docs")
    (assay_home / "evals" / "suites" / "docs" / "suite.toml").write_text('kind = "fixture"\ndepends_on = ["docs/**"]\n')
    return tmp_path / "factory", ids


def release_experiment(home: Path, factory: Path, sc: Path, *args: str):
    return run_cli(home, "experiment", "--release", *args, "--sandbox", "none", "--trials-per-task", "1",
                   plugins=PLUGINS, cwd=factory, FAKE_SCENARIO=str(sc))


@pytest.mark.slow
def test_release_mode_compares_the_last_tag_with_head_on_the_suites_touched_since(released, assay_home, tmp_path):
    """Story 5 / the release mode: "Its Baseline is the last release's tag, and its suites come from
    the changes since that tag"; recorded with the tag and commit, shown in `assay experiments` and
    the Inbox. A tag on the released commit itself names this release, so it is passed over."""
    factory, ids = released
    git(factory, "tag", "v1.2", ids["head"])  # this release's own tag
    sc = scenario(tmp_path / "s.json", {"old": {"*": "wrong"}, "new": {"*": "right"}})
    result = release_experiment(assay_home, factory, sc)
    assert result.returncode == 0, result.stderr
    assert f"Release   {ids['head'][:10]}, since the last release v1.1 ({ids['v1.1'][:10]})" in result.stdout
    assert "skills/** matches skills/implement.md" in result.stdout and "Not touched: docs" in result.stdout

    [folder] = (assay_home / "evals" / "experiments").iterdir()
    setup = json.loads((folder / "setup.json").read_text())
    assert setup["baseline"]["commit"] == ids["v1.1"] and setup["candidate"]["commit"] == ids["head"]
    assert setup["baseline"]["model"] == "old" and setup["candidate"]["model"] == "new"
    assert setup["suites"] == ["fixture"]
    assert setup["release"] == {"tag": "v1.1", "tag_commit": ids["v1.1"], "commit": ids["head"]}
    record = json.loads((assay_home / "logs" / "experiment" / f"{folder.name}.json").read_text())
    assert record["release"] == setup["release"] and record["outcome"] == "pass"

    listing = json.loads(run_cli(assay_home, "experiments", "--json", plugins=PLUGINS).stdout)
    assert [row["release"] for row in listing] == [setup["release"]]
    table = run_cli(assay_home, "experiments", plugins=PLUGINS).stdout
    assert f"{ids['head'][:10]} since v1.1" in table
    shown = run_cli(assay_home, "experiments", folder.name, plugins=PLUGINS).stdout
    assert f"Release   {ids['head'][:10]}, since the last release v1.1" in shown
    inbox = json.loads(run_cli(assay_home, "inbox", "--json", plugins=PLUGINS).stdout)
    assert [(row["id"], row["release"]) for row in inbox["done"]] == [(folder.name, setup["release"])]
    assert f"{ids['head'][:10]} since v1.1: Verdict pass" in run_cli(assay_home, "inbox", plugins=PLUGINS).stdout


def test_a_release_that_touches_no_suite_needs_no_experiment(released, assay_home, tmp_path):
    """Story 55: a release whose changes since the last tag touch no Eval suite says so, exits 0
    and starts nothing."""
    factory, ids = released
    sc = scenario(tmp_path / "s.json", {})
    result = release_experiment(assay_home, factory, sc, ids["docs"])
    assert result.returncode == 0, result.stderr
    assert f"Release {ids['docs'][:10]} since v1.1 ({ids['v1.1'][:10]}) touches no Eval suite: it needs no Experiment." in result.stdout
    assert "Not touched: docs, fixture" in result.stdout
    assert not (assay_home / "evals" / "experiments").exists()
    assert not (assay_home / "logs").exists()


@pytest.mark.slow
def test_the_tag_pattern_comes_from_the_user_config(released, assay_home, tmp_path):
    """The release tag pattern is configurable ([release] tag_pattern in $ASSAY_HOME/config.toml):
    with "build-*" the last release is build-7, so only the HEAD commit's changes count."""
    factory, ids = released
    (assay_home / "config.toml").write_text('[release]\ntag_pattern = "build-*"\n')
    sc = scenario(tmp_path / "s.json", {"old": {"*": "wrong"}, "new": {"*": "right"}})
    result = release_experiment(assay_home, factory, sc, "--json")
    assert result.returncode == 0, result.stderr
    [folder] = (assay_home / "evals" / "experiments").iterdir()
    assert json.loads((folder / "setup.json").read_text())["release"]["tag"] == "build-7"


@pytest.mark.parametrize("config, args, message", [
    ('[release]\ntag_pattern = ""\n', [], "config.toml: release.tag_pattern: expected a non-empty glob"),
    ("[release\n", [], "config.toml: can't be read"),
    ('[release]\ntag_pattern = "nope-*"\n', [], "no release tag matching 'nope-*' comes before"),
    (None, ["--baseline", "v1.0"], "--baseline can't be used in release mode"),
    (None, ["--suite", "fixture"], "--suite can't be used in release mode"),
    (None, ["nosuchref"], "no commit 'nosuchref' in the Factory"),
])
def test_release_mode_refuses_bad_input_in_one_line(released, assay_home, tmp_path, config, args, message):
    """Bad input (a malformed User config, no tag, flags release mode sets itself): one line, exit 2,
    nothing recorded."""
    factory, _ = released
    if config is not None:
        (assay_home / "config.toml").write_text(config)
    result = release_experiment(assay_home, factory, scenario(tmp_path / "s.json", {}), *args)
    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("assay: error: ") and message in lines[0], result.stderr
    assert not (assay_home / "evals" / "experiments").exists()


# --- assay release-check ---------------------------------------------------------------------------

PASSES = {"old": {"*": "wrong"}, "new": {"*": "right"}}  # the Candidate better on every task: pass
FAILS = {"old": {"*": "right"}, "new": {"*": "wrong"}}  # worse on every task: fail
EQUAL = {"old": {"*": "right"}, "new": {"*": "right"}}  # equal on 4 tasks: inconclusive
# Better on three tasks, equal on one: a pass that one flipped Score would make inconclusive, so
# its decisive Scores wait on a person's recheck.
ON_THE_EDGE = {"old": {"fixture/t4": "right", "*": "wrong"}, "new": {"*": "right"}}


def release_check_argv(factory: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "assay", "release-check", "--factory", str(factory), "--sandbox", "none", *args]


def release_check(home: Path, factory: Path, sc: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as a CI job runs it: no terminal on any of its streams."""
    return subprocess.run(release_check_argv(factory, *args), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, env=cli_env(home, PLUGINS, FAKE_SCENARIO=str(sc)), timeout=300)


def experiment_folders(home: Path) -> list[Path]:
    return sorted((home / "evals" / "experiments").iterdir())


@pytest.mark.slow
def test_release_check_passes_with_exit_0_printing_progress(released, assay_home, tmp_path):
    """Stories 50-52: release-check starts the release's Experiment itself, waits printing progress,
    and a pass carries on (exit 0)."""
    factory, ids = released
    result = release_check(assay_home, factory, scenario(tmp_path / "s.json", PASSES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Trials: " in result.stderr and "16/16 done" in result.stderr
    assert f"Release {ids['head'][:10]}: Verdict pass. It may ship." in result.stdout
    [folder] = experiment_folders(assay_home)
    assert json.loads((folder / "setup.json").read_text())["release"]["tag"] == "v1.1"


@pytest.mark.slow
@pytest.mark.parametrize("behaviour, verdict", [(FAILS, "fail"), (EQUAL, "inconclusive")])
def test_a_fail_or_inconclusive_verdict_holds_the_release_without_a_terminal(released, assay_home, tmp_path,
                                                                            behaviour, verdict):
    """Story 52 without a terminal (CI): the Verdict and its interval are shown, and the command
    exits 4 with one clear line instead of asking."""
    factory, ids = released
    result = release_check(assay_home, factory, scenario(tmp_path / "s.json", behaviour))
    assert result.returncode == 4, result.stdout + result.stderr
    assert re.search(rf"Verdict: {verdict}, interval \[[-+]\d\.\d{{3}}, [-+]\d\.\d{{3}}\]", result.stdout)
    held = [line for line in result.stderr.splitlines() if "is held" in line]
    assert len(held) == 1 and held[0].startswith(f"Release {ids['head'][:10]} is held: Verdict {verdict}, interval [")
    assert "Release anyway?" not in result.stdout + result.stderr


def on_terminal(home: Path, factory: Path, sc: Path, answer: str) -> tuple[int, str]:
    """Run release-check on a pseudo-terminal, answering ``answer`` to its question if it asks."""
    return terminal(release_check_argv(factory), cli_env(home, PLUGINS, FAKE_SCENARIO=str(sc)),
                    [(b"Release anyway? [y/N]", answer)])


@pytest.mark.slow
def test_on_a_terminal_a_fail_asks_whether_to_release_anyway(released, assay_home, tmp_path):
    """Story 52 on a terminal: a fail shows the interval and asks; "n" holds it (exit 4), "y"
    releases it (exit 0); each answer is recorded in the Activity log. The finished Experiment is
    not run again."""
    factory, ids = released
    sc = scenario(tmp_path / "s.json", FAILS)
    code, text = on_terminal(assay_home, factory, sc, "n")
    assert code == 4, text
    assert re.search(r"The Verdict is fail, interval \[[-+]\d\.\d{3}, [-+]\d\.\d{3}\]\. Release anyway\? \[y/N\]", text)
    assert "not released" in text
    code, text = on_terminal(assay_home, factory, sc, "y")
    assert code == 0, text
    assert "released anyway over a fail Verdict" in text
    [folder] = experiment_folders(assay_home)
    decisions = [json.loads(line) for line in (assay_home / "logs" / "activity.jsonl").read_text().splitlines()
                 if json.loads(line)["event"] == "release_decision"]
    assert [(d["id"], d["verdict"], d["shipped"]) for d in decisions] == [(folder.name, "fail", False),
                                                                          (folder.name, "fail", True)]
    assert f"release {ids['head'][:10]} since v1.1" in decisions[-1]["message"]
    record = json.loads((assay_home / "logs" / "experiment" / f"{folder.name}.json").read_text())
    assert record["runs"] == 1, "a finished Experiment only reports"


def read_until(proc: subprocess.Popen, text: str, timeout: float = 120) -> str:
    """Read ``proc``'s stdout until ``text`` appears (the command still runs)."""
    seen = ""
    deadline = time.monotonic() + timeout
    while text not in seen:
        assert time.monotonic() < deadline, f"{text!r} never appeared in: {seen}"
        if select.select([proc.stdout], [], [], 0.5)[0]:
            chunk = os.read(proc.stdout.fileno(), 65536).decode()
            assert chunk or text in seen, f"the command ended before {text!r}: {seen}"
            seen += chunk
    return seen


@pytest.mark.slow
def test_scores_waiting_on_a_recheck_are_listed_and_waited_for(released, assay_home, tmp_path):
    """Story 53: the Scores waiting on a recheck are listed; --no-wait exits 5 instead of waiting;
    without it the command waits until every listed Score is rechecked, then carries on."""
    factory, _ = released
    sc = scenario(tmp_path / "s.json", ON_THE_EDGE)
    early = release_check(assay_home, factory, sc, "--no-wait")
    assert early.returncode == 5, early.stdout + early.stderr
    [folder] = experiment_folders(assay_home)
    verdict = json.loads((folder / "verdict.json").read_text())
    listed = [item for item in verdict["recheck"] if not item["rechecked"]]
    assert verdict["verdict"] == "pass" and listed, "the fixture puts decisive Scores on the edge"
    assert "Waiting for your recheck of" in early.stdout
    assert all(item["trial"] in early.stdout for item in listed)
    assert "Not waiting (--no-wait)" in early.stderr

    waiting = subprocess.Popen(release_check_argv(factory, "--poll", "0.2"), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc)))
    read_until(waiting, "Recheck each: assay recheck")
    time.sleep(1)
    assert waiting.poll() is None, "it waits while Scores are unchecked"
    for item in listed:  # confirm each Grader's Score
        done = run_cli(assay_home, "recheck", folder.name, item["trial"], "--pass" if item["passed"] else "--fail",
                       "--why", "checked", plugins=PLUGINS)
        assert done.returncode == 0, done.stderr
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, out + err
    assert "Every listed Score is rechecked." in out and "Verdict pass. It may ship." in out


@pytest.mark.slow
def test_an_interrupted_release_check_resumes_the_same_experiment(released, assay_home, tmp_path):
    """Story 54: release-check killed with SIGKILL mid-run, run again, picks up the same Experiment:
    finished Trials are kept, and it ends with the Verdict."""
    factory, _ = released
    sc = scenario(tmp_path / "s.json", {"old": {"*": "sleep:0.4,wrong"}, "new": {"*": "sleep:0.4,right"}})
    proc = subprocess.Popen(release_check_argv(factory, "--workers", "1"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc)))
    trials = assay_home / "evals" / "experiments"
    deadline = time.monotonic() + 120
    while len(list(trials.glob("*/trials/*/*/attempt-*/trial.json"))) < 3:
        assert time.monotonic() < deadline and proc.poll() is None, "no Trial finished"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(0.5)
    finished = {p: p.stat().st_mtime_ns for p in trials.glob("*/trials/*/*/attempt-*/trial.json")}
    [folder] = experiment_folders(assay_home)
    assert json.loads(run_cli(assay_home, "inbox", "--json", plugins=PLUGINS).stdout)["needs_you"][0]["state"] == "interrupted"

    resumed = release_check(assay_home, factory, sc)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"Experiment {folder.name}" in resumed.stdout and experiment_folders(assay_home) == [folder]
    for path, mtime in finished.items():
        assert path.stat().st_mtime_ns == mtime, f"finished Trial {path} ran again"
    assert json.loads((assay_home / "logs" / "experiment" / f"{folder.name}.json").read_text())["runs"] == 2


@pytest.mark.slow
def test_a_paused_release_says_when_it_can_resume_and_exits_3(released, assay_home, tmp_path):
    """A release Experiment paused at a plan limit says when it was hit and when the limit resets
    (as the Harness stated it), and exits with its own code, 3."""
    factory, _ = released
    resets = int(time.time()) + 3 * 3600
    sc = scenario(tmp_path / "s.json", {"old": {"*": "wrong"},
                                        "new": {"fixture/t1": f"plan_limit:five_hour rejected - resets at {resets}",
                                                "*": "right"}})
    result = release_check(assay_home, factory, sc, "--workers", "1")
    assert result.returncode == 3, result.stdout + result.stderr
    [folder] = experiment_folders(assay_home)
    assert f"Experiment {folder.name} paused at a plan limit (hit at " in result.stdout
    when = datetime.fromtimestamp(resets, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    assert f"It can resume once the limit resets, at {when} (in 2h5" in result.stdout
    assert "run this command again then" in result.stdout
    assert not (folder / "verdict.json").exists()


@pytest.mark.slow
def test_release_check_resumes_a_release_experiment_started_with_another_bar(released, assay_home, tmp_path):
    """Story 54: the release Experiment started by `assay experiment --release` with its own Bar
    (1 Trial per task, margin 0.2) is the one release-check picks up: it reports that Experiment's
    Verdict instead of refusing the Bar as changed or starting another."""
    factory, _ = released
    sc = scenario(tmp_path / "s.json", PASSES)
    started = release_experiment(assay_home, factory, sc, "--margin", "0.2")
    assert started.returncode == 0, started.stderr
    [folder] = experiment_folders(assay_home)
    checked = release_check(assay_home, factory, sc)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"Experiment {folder.name}" in checked.stdout and "Verdict pass. It may ship." in checked.stdout
    assert experiment_folders(assay_home) == [folder]
    assert json.loads((folder / "bar.json").read_text())["margin"] == 0.2
    assert json.loads((assay_home / "logs" / "experiment" / f"{folder.name}.json").read_text())["runs"] == 1


@pytest.mark.slow
def test_scores_a_grader_left_pending_end_the_check_with_exit_5(tmp_path, assay_home):
    """Story 53's other half: a release never rests on unscored Trials. A model Grader that
    can't answer leaves Scores pending: no final Verdict, exit 5, naming the tasks."""
    from tests.review_fixtures import make_code_review_suite

    make_released_factory(tmp_path)
    [task] = make_code_review_suite(assay_home, tasks=1)
    (assay_home / "evals" / "suites" / "reviews" / "suite.toml").write_text('kind = "code-review"\ndepends_on = ["skills/**"]\n')
    sc = scenario(tmp_path / "s.json", {"old": {"*": "report:FOUND it"}, "new": {"*": "report:FOUND it"}})
    result = release_check(assay_home, tmp_path / "factory", sc, "--model-grader", "fake-judge:broken",
                           "--unsandboxed-grader")
    assert result.returncode == 5, result.stdout + result.stderr
    assert f"No final Verdict: it waits on Scores still pending for {task}: run the command that started it again" \
        in result.stderr
    assert "invalid twice" in run_cli(assay_home, "experiments", experiment_folders(assay_home)[0].name, "--json",
                                      plugins=PLUGINS).stdout


@pytest.mark.slow
@pytest.mark.parametrize("stopped", [False, True, "ctrl-c"])
def test_a_second_release_check_waits_for_the_run_in_another_process(released, assay_home, tmp_path, stopped):
    """Two CI jobs for the same commit: the second says the release Experiment runs in another
    process and waits for it (not refused), then reports the Verdict that run reached (exit 0),
    and no Trial runs twice. A run stopped on purpose in the other process is not resumed behind
    the back of whoever stopped it: the second says so and exits 3. Ctrl-C ends only the wait (130)."""
    factory, _ = released
    sc = scenario(tmp_path / "s.json", {"old": {"*": "sleep:0.3,wrong"}, "new": {"*": "sleep:0.3,right"}})
    env = cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc))
    first = subprocess.Popen(release_check_argv(factory, "--workers", "1"), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    trials = assay_home / "evals" / "experiments"
    wait_for(lambda: list(trials.glob("*/trials/*/*/attempt-*/trial.json")), what="the first run's first Trial")
    [folder] = experiment_folders(assay_home)
    second = subprocess.Popen(release_check_argv(factory, "--workers", "1", "--poll", "0.2"),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**env, "PYTHONUNBUFFERED": "1"})
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(second.stdout), daemon=True)
    reader.start()
    wait_for(lambda: any("waiting for it to end" in line for line in said), what="the second to wait")
    if stopped == "ctrl-c":
        second.send_signal(signal.SIGINT)
    elif stopped:
        assert run_cli(assay_home, "stop", folder.name, plugins=PLUGINS).returncode == 0
    second.wait(timeout=300)
    reader.join(timeout=30)
    out, err = "".join(said), second.stderr.read()
    second.stdout.close()
    second.stderr.close()
    first_out, _ = first.communicate(timeout=300)
    assert f"Experiment {folder.name} is already running in another process (process {first.pid}, since " in out
    assert "waiting for it to end" in out and experiment_folders(assay_home) == [folder]
    if stopped == "ctrl-c":
        assert second.returncode == 130 and "Stopped waiting; the other run goes on" in err, out + err
        assert first.returncode == 0 and "Verdict pass. It may ship." in first_out
        return
    if stopped:
        assert second.returncode == 3, out + err
        assert f"Experiment {folder.name} was stopped in the other process: run this command again to resume it." in out
        assert not (folder / "verdict.json").exists()
        return
    assert (first.returncode, second.returncode) == (0, 0), out + err
    assert "The other run ended." in out and "Verdict pass. It may ship." in out and "Verdict pass. It may ship." in first_out
    attempts = list(folder.glob("trials/*/*/attempt-*"))
    assert attempts and all(a.name == "attempt-0" for a in attempts)  # nothing ran twice


@pytest.mark.slow
def test_two_release_checks_started_together_both_report_the_one_verdict(released, assay_home, tmp_path):
    """Two CI jobs started in the same instant: whichever loses the race to the Experiment's lock
    waits for the other (never exit 2), and both say the release may ship; one Experiment."""
    factory, _ = released
    sc = scenario(tmp_path / "s.json", {"old": {"*": "sleep:0.2,wrong"}, "new": {"*": "sleep:0.2,right"}})
    env = cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc))
    jobs = [subprocess.Popen(release_check_argv(factory, "--workers", "1", "--poll", "0.2"), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    said = [job.communicate(timeout=300) for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0], said
    assert all("Verdict pass. It may ship." in out for out, _ in said)
    assert len(experiment_folders(assay_home)) == 1

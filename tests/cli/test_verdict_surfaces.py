"""Issue 37: every surface says what a Verdict really is — final or not, what it waits on, and
the command that does it — from one definition (`assay.engine.results.finality`).

Surfaces compared: `assay experiment --json` and its exit code, `assay experiments [ID] [--json]`,
`assay inbox [--json]`, the Console's Inbox, list and Experiment pages (HTML and JSON twin).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from assay.console.app import make_app
from assay.hooks import plugin_manager
from assay.storage.home import AssayHome
from starlette.testclient import TestClient

from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS, scenario
from tests.pair_fixtures import experiment_folder, make_paired_suite, paired_experiment
from tests.review_fixtures import make_code_review_suite, make_review_factory

EXIT_NOT_FINAL = 5


def cli(home: Path, *args: str):
    return run_cli(home, *args, plugins=PLUGINS)


def console(home: Path) -> TestClient:
    return TestClient(make_app(AssayHome(home), plugin_manager.load()), base_url="http://127.0.0.1:8700")


def rechecks_pending(home: Path, tmp: Path):
    """A code-review Experiment whose Grader marks every Candidate Score borderline: its Verdict
    waits on rechecks."""
    make_code_review_suite(home, tasks=3)
    sc = scenario(tmp / "s.json", {"opus-7": {"*": "report:FOUND it"}, "sonnet-9": {"*": "report:MAYBE nothing"}})
    return run_cli(home, "experiment", "HEAD", "--factory", str(make_review_factory(tmp)), "--suite", "reviews",
                   "--sandbox", "none", "--candidate-model", "sonnet-9", "--unsandboxed-grader",
                   "--trials-per-task", "1", "--model-grader", "fake-judge:j", "--json",
                   plugins=PLUGINS, FAKE_SCENARIO=str(sc))


@pytest.mark.slow
def test_a_verdict_waiting_on_rechecks_is_not_final_on_every_surface(assay_home, tmp_path):
    """Finding: with Scores waiting on a recheck, `--json` printed a bare pass with exit 0, the list
    said `done pass`, the Inbox `Verdict pass`, the Console a large "Verdict: pass". Every surface
    now reads the one `final` and the same waiting reasons."""
    result = rechecks_pending(assay_home, tmp_path)
    assert result.returncode == EXIT_NOT_FINAL, result.stderr
    line = json.loads(result.stdout.splitlines()[-1])
    exp_id = line["id"]
    assert line["final"] is False
    [wait] = line["waiting"]
    assert wait["on"] == "recheck" and wait["blocks"] is True and wait["items"]
    assert wait["command"].startswith(f"assay recheck {exp_id} {wait['items'][0]} --pass|--fail --why")

    shown = json.loads(cli(assay_home, "experiments", exp_id, "--json").stdout)
    assert shown["verdict"]["final"] is False and shown["verdict"]["waiting"] == line["waiting"]
    [row] = json.loads(cli(assay_home, "experiments", "--json").stdout)
    assert row["final"] is False and row["waiting"] == line["waiting"]
    listed = cli(assay_home, "experiments").stdout
    assert "FINAL" in listed and "no: recheck" in listed

    box = json.loads(cli(assay_home, "inbox", "--json").stdout)
    [needs] = box["needs_you"]
    assert needs["id"] == exp_id and needs["final"] is False and needs["waiting"] == line["waiting"]
    assert "Provisional Verdict" in needs["summary"] and "not final" in needs["summary"]
    text = cli(assay_home, "inbox").stdout
    assert f"{exp_id} not final: {wait['text']}" in text

    again = cli(assay_home, "experiments", exp_id).stdout
    assert f"Provisional Verdict (not final): {line['verdict']}" in again and f"Not final: {wait['text']}" in again

    c = console(assay_home)
    page = c.get(f"/experiments/{exp_id}?format=json").json()
    assert page["verdict"]["final"] is False and page["verdict"]["waiting"] == line["waiting"]
    html = c.get(f"/experiments/{exp_id}").text
    assert "Provisional Verdict (not final)" in html and f'class="verdict v-{line["verdict"]}"' not in html
    assert c.get("/?format=json").json()["needs_you"] == box["needs_you"]
    assert c.get("/experiments?format=json").json()["experiments"][0]["final"] is False
    assert "not final" in c.get("/").text


@pytest.mark.slow
def test_a_verdict_waiting_on_people_says_so_with_the_real_command(assay_home, tmp_path):
    """Finding: while people's reviews were pending, the provisional Verdict said the tasks
    "dropped out as void … fix what made their Trials void" though every Trial delivered, and the
    hint printed a literal `assay review ID PAIR`."""
    make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--people", "counted",
                               "--people-reader", "alice")
    assert result.returncode == EXIT_NOT_FINAL, result.stderr
    line = json.loads(result.stdout.splitlines()[-1])
    exp_id, pair = line["id"], "pairs__p1--0"
    [wait] = line["waiting"]
    assert wait["on"] == "people" and wait["items"] == [f"{pair} (alice)"]
    assert f"assay review {exp_id} {pair} --reader alice --merge A=yes|no,B=yes|no" in wait["command"]
    text = cli(assay_home, "experiments", exp_id).stdout
    assert "void" not in text.split("Look 1")[1], text
    assert "wait on people's reviews" in text and "waits on people's reviews of pairs__p1--0 (alice)" in text
    assert "assay review ID PAIR" not in text
    verdict = json.loads((experiment_folder(assay_home) / "verdict.json").read_text())
    assert verdict["pending_on_people"] == ["pairs/p1#0"] and verdict["final"] is False


@pytest.mark.slow
def test_a_running_experiment_is_in_the_inbox_with_its_stop(assay_home, tmp_path):
    """Finding (977 D1, 978 US5): running Commands weren't in the Inbox. They are listed, with
    `assay stop ID` in the CLI and a Stop button in the Console that stops it."""
    import re

    from tests.conftest import wait_for
    from tests.experiment_fixtures import make_factory, make_suite, start_experiment

    factory = make_factory(tmp_path)
    make_suite(assay_home)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:60,right"}, "bad": {"*": "sleep:60,right"}})
    proc = start_experiment(assay_home, factory, sc, "--candidate-model", "bad")
    try:
        wait_for(lambda: json.loads(cli(assay_home, "inbox", "--json").stdout)["running"], what="a running row")
        [row] = json.loads(cli(assay_home, "inbox", "--json").stdout)["running"]
        assert row["kind"] == "experiment" and row["stop"] == f"assay stop {row['id']}"
        assert f"assay stop {row['id']}" in cli(assay_home, "inbox").stdout.split("Needs you:")[0]
        c = console(assay_home)
        html = c.get("/").text
        assert f'action="/commands/experiment/{row["id"]}/stop"' in html
        csrf = re.search(r'name="csrf" value="([^"]+)"', html)[1]
        stopped = c.post(f"/commands/experiment/{row['id']}/stop", data={"csrf": csrf}, follow_redirects=False)
        assert stopped.status_code == 303, stopped.text
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 3 and json.loads(out.splitlines()[-1])["outcome"] == "stopped", err
        assert json.loads(cli(assay_home, "inbox", "--json").stdout)["running"] == []
        assert c.post(f"/commands/experiment/{row['id']}/stop", data={"csrf": csrf}).status_code == 409
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_a_broken_arm_is_said_first_with_its_first_cause_and_needs_you(assay_home, tmp_path):
    """Finding: a Custom runner that failed every Trial gave "inconclusive, about 125 more Eval
    tasks would settle it", nothing warned, and the Trial table showed no reason. Now the Verdict
    says first that the Arm is broken, with the first cause; the Trial table shows each reason;
    the Inbox lists it under Needs you; the Console says it above the Verdict."""
    from tests.experiment_fixtures import make_process_suite, make_runner

    make_process_suite(assay_home, tasks=3)
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    broken = make_runner(tmp_path / "broken", "broken", {"*": "noresult"})
    result = run_cli(assay_home, "experiment", "--suite", "proc", "--baseline-runner", str(good),
                     "--candidate-runner", str(broken), "--trials-per-task", "1", "--sandbox", "none",
                     plugins=PLUGINS, cwd=tmp_path)
    assert result.returncode in (0, 5), result.stderr
    said = result.stdout[result.stdout.index("Broken Arm:"):]
    assert said.startswith("Broken Arm: every Trial of the Candidate failed the same way; first cause (proc/p")
    assert "the runner wrote no result.json" in said.splitlines()[0]
    assert said.splitlines()[1].startswith(("Verdict: ", "Provisional Verdict")), "said first, right before the Verdict"
    exp_id = json.loads(cli(assay_home, "experiments", "--json").stdout)[0]["id"]
    shown = cli(assay_home, "experiments", exp_id).stdout
    assert "the runner wrote no result.json" in shown.split("Broken Arm")[0], "the Trial table shows the reason"
    [broken_arm] = json.loads(cli(assay_home, "experiments", exp_id, "--json").stdout)["verdict"]["broken_arms"]
    assert broken_arm["arm"] == "candidate" and broken_arm["failed"] == broken_arm["trials"] == 3
    box = json.loads(cli(assay_home, "inbox", "--json").stdout)
    assert [r["id"] for r in box["needs_you"]] == [exp_id] and box["needs_you"][0]["broken_arms"] == [broken_arm]
    assert box["needs_you"][0]["summary"].startswith("Broken Candidate (3/3 Trials: failed: the runner wrote no result.json")
    html = console(assay_home).get(f"/experiments/{exp_id}").text
    assert html.index("Broken Arm:") < html.index("Verdict")


@pytest.mark.slow
def test_how_many_more_shows_the_spec_figure_and_the_look_rules_each_labelled(assay_home, tmp_path):
    """Finding: on the same counts `assay verdict` said about 28 more Eval tasks (the spec's, 977
    D55) and the Experiment "about 127 more … at look 2" (the default look rule's). The Experiment
    now shows both, each saying what it is, and its spec figure is `assay verdict`'s."""
    import re

    from tests.experiment_fixtures import experiment, make_factory, make_suite

    factory = make_factory(tmp_path)
    make_suite(assay_home)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"fixture/t1": "wrong", "*": "right"}})
    result = experiment(assay_home, factory, sc, "--candidate-model", "bad")
    assert result.returncode == 0, result.stderr
    spec = re.search(r"How many more, the spec's figure \(977 D55: the credible interval, judged at one look\): "
                     r"about (\d+) more Eval tasks would give a clear Verdict", result.stdout)
    rule = re.search(r"How many more, the look rule's figure \(the confidence sequence, valid at every look\): "
                     r"about (\d+) more Eval tasks would settle it at look 2", result.stdout)
    assert spec and rule, result.stdout
    counts = {"trials_per_task": 2, "tasks": [{"id": "t1", "baseline": 2, "candidate": 0},
                                              *({"id": f"t{i}", "baseline": 2, "candidate": 2} for i in (2, 3, 4))]}
    (tmp_path / "counts.json").write_text(json.dumps(counts))
    alone = cli(assay_home, "verdict", str(tmp_path / "counts.json"))
    assert f"(the spec's figure, 977 D55: the credible interval, judged at one look): about {spec[1]}" in alone.stdout
    assert int(rule[1]) != int(spec[1])
    page = console(assay_home).get(f"/experiments/{json.loads(cli(assay_home, 'experiments', '--json').stdout)[0]['id']}").text
    assert f"the spec's figure (977 D55: the credible interval, judged at one look): about {spec[1]}" in page
    assert "the look rule's figure (the confidence sequence, valid at every look): about" in page.replace("&#39;", "'")


def test_a_verdict_while_its_experiment_runs_again_is_not_final_on_every_surface(assay_home: Path):
    """Found in a whole run: the Console showed "Verdict: … final" while its Experiment's state said
    "running" (the Verdict's file is written a moment before the run ends, and an extension's next
    look runs beside the last look's Verdict). While the run goes on, every surface says the Verdict
    it shows is not final yet, and why."""
    import os

    import attrs
    from assay.storage import formats
    from assay.storage.owners import process_start
    from assay.storage.records import CommandRecord

    from tests.written_experiments import write_experiment

    home = AssayHome(assay_home)
    exp_id = write_experiment(home, 0, 12)
    record_file = home.command_logs("experiment") / f"{exp_id}.json"
    finished = formats.read(record_file, CommandRecord)
    assert json.loads(cli(assay_home, "experiments", exp_id, "--json").stdout)["verdict"]["final"] is True
    # the run again, as this process (alive, so the record's process runs)
    formats.write(record_file, attrs.evolve(finished, state="running", ended_at=None, pid=os.getpid(),
                                            pid_start=process_start(os.getpid())))
    shown = json.loads(cli(assay_home, "experiments", exp_id, "--json").stdout)
    assert shown["state"] == "running" and shown["verdict"]["final"] is False
    assert [w["on"] for w in shown["verdict"]["waiting"]] == ["running"]
    assert f"assay stop {exp_id}" in shown["verdict"]["waiting"][0]["text"]
    [row] = json.loads(cli(assay_home, "experiments", "--json").stdout)
    assert row["state"] == "running" and row["final"] is False and row["waiting"] == shown["verdict"]["waiting"]
    page = console(assay_home).get(f"/experiments/{exp_id}").text
    assert "Provisional Verdict (not final)" in page and "waits on its run, still going" in page

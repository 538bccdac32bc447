"""Issue 18, Pairs and Pair evidence: Baseline Trial k with Candidate Trial k of a process task;
each Arm's new test files (``process_grading.new_tests``, run alone by its ``command``) run on the
unchanged base and on the other Arm's final commit, offline in the code Grader's sandbox under the
Bar's timeout; evidence, never a Score; a run that timed out is null; each side's diff kept in
``pairs/<pair>.json``.
"""

from __future__ import annotations

import json

import pytest

from tests.pair_fixtures import (CANDIDATE, SCENARIO, experiment_folder, make_paired_suite, pair_files,
                                 paired_experiment)


@pytest.mark.slow
def test_each_arm_s_new_tests_run_on_the_base_and_across(assay_home, tmp_path):
    """Spec: 'each Arm's new test files … run on the unchanged base and against the other Arm's final
    commit'; results are evidence, never Scores; each side's diff is kept in pairs/<pair>.json."""
    [task] = make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "2")
    assert result.returncode == 0, result.stderr
    pairs = pair_files(assay_home)
    assert sorted(pairs) == ["pairs__p1--0", "pairs__p1--1"], "one pair per index, named for neither Arm"
    for name, pair in pairs.items():
        assert pair["format"] == 1 and pair["task"] == task
        base = {t["file"]: (t["base"], t["cross"]) for t in pair["baseline"]["tests"]}
        cand = {t["file"]: (t["base"], t["cross"]) for t in pair["candidate"]["tests"]}
        assert base == {"test_new_b.py": (False, False)}, "the fix's test fails on base and on the unfixed Candidate"
        assert cand == {"test_new_c1.py": (False, True), "test_new_c2.py": (True, True)}
        assert sorted(pair["baseline"]["diff"]) == ["calc.py", "test_new_b.py"]
        assert "+    return a + b" in pair["baseline"]["diff"]["calc.py"]
        assert sorted(pair["candidate"]["diff"]) == ["test_new_c1.py", "test_new_c2.py"]
        assert pair["baseline"]["head"] != pair["candidate"]["head"]
    scores = [json.loads(p.read_text()) for p in experiment_folder(assay_home).glob("scores/*/*.json")]
    assert {s["grader"] for s in scores} == {"code"}, "Pair evidence is never a Score"
    assert not list(experiment_folder(assay_home).glob("pairs/*.work")), "the checkouts are removed"
    from tests.conftest import run_cli
    shown = json.loads(run_cli(assay_home, "experiments", experiment_folder(assay_home).name, "--json",
                               plugins="fake_agent_plugin").stdout)
    assert [p["pair"] for p in shown["pairs"]] == ["pairs__p1--0", "pairs__p1--1"]
    assert shown["pairs"][0]["candidate"]["tests"][0] == {"file": "test_new_c1.py", "base": False, "cross": True}

    before = {p: p.stat().st_mtime_ns for p in experiment_folder(assay_home).glob("pairs/*.json")}
    again = paired_experiment(assay_home, tmp_path, "--trials-per-task", "2")
    assert again.returncode == 0, again.stderr
    assert {p: p.stat().st_mtime_ns for p in before} == before, "a resume keeps the evidence it has"


@pytest.mark.slow
def test_a_run_that_times_out_is_null_never_a_failure(assay_home, tmp_path):
    """Spec: 'a run that timed out or couldn't be prepared is null, never a failure' (under the Bar's timeout)."""
    make_paired_suite(assay_home)
    slow = ("commit:test_new_slow.py=import time^ unittest||class T(unittest.TestCase):|"
            "    def test_it(self):|        time.sleep(60)")
    data = {**SCENARIO, "gpt-9": {"*": CANDIDATE + "," + slow}}
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--timeout", "8", scenario_data=data)
    assert result.returncode == 0, result.stderr
    [pair] = pair_files(assay_home).values()
    cand = {t["file"]: (t["base"], t["cross"]) for t in pair["candidate"]["tests"]}
    assert cand["test_new_slow.py"] == (None, None)
    assert cand["test_new_c1.py"] == (False, True)


@pytest.mark.slow
def test_a_task_without_process_grading_has_no_pairs(assay_home, tmp_path):
    """Spec ('Merge danger'): without process_grading an Experiment runs as before: no pairs folder."""
    make_paired_suite(assay_home, grading="")
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1")
    assert result.returncode == 0, result.stderr
    assert not (experiment_folder(assay_home) / "pairs").exists()


@pytest.mark.parametrize("grading, field", [
    ('[process_grading]\ncommand = ["t", "{file}"]\n', "process_grading.new_tests"),
    ('[process_grading]\nnew_tests = ["t*"]\ncommand = ["pytest"]\n', "process_grading.command"),
    ('[process_grading]\nnew_tests = ["t*"]\ncommand = ["t", "{file}"]\nextra = 1\n', "process_grading.extra"),
])
def test_a_malformed_process_grading_is_refused_naming_the_field(assay_home, tmp_path, grading, field):
    """Brief: bad input is refused with one line naming the file and the field, before any Trial."""
    make_paired_suite(assay_home, grading=grading)
    result = paired_experiment(assay_home, tmp_path)
    assert result.returncode == 2
    assert "task.toml" in result.stderr and field in result.stderr
    assert not (assay_home / "evals" / "experiments").exists()


@pytest.mark.slow
def test_evidence_and_the_panel_run_in_the_bwrap_sandbox_offline(assay_home, tmp_path):
    """Spec: the new tests run 'offline in the code-Grader sandbox', and each panel seat's session is
    sandboxed: under bwrap a new test that reaches for the network finds none, and the panel's calls
    are made all the same."""
    from tests.pair_fixtures import make_factory, run_cli, scenario

    make_paired_suite(assay_home)
    net = ("commit:test_new_net.py=import socket^ unittest||class T(unittest.TestCase):|"
           "    def test_offline(self):|        self.assertRaises(OSError^ socket.create_connection^ "
           "('1.1.1.1'^ 53)^ timeout=3)")
    (tmp_path / "scenario").mkdir()  # its own folder: the fake agent may write beside it, never in ASSAY_HOME
    sc = scenario(tmp_path / "scenario" / "s.json", {**SCENARIO, "gpt-9": {"*": CANDIDATE + "," + net}})
    factory = make_factory(tmp_path)
    result = run_cli(assay_home, "experiment", "change", "--factory", str(factory), "--suite", "pairs",
                     "--sandbox", "bwrap", "--baseline-model", "opus-7", "--candidate-model", "gpt-9", "--json",
                     "--trials-per-task", "1", "--panel-seat", "harness=fake-judge,model=kimi-fixed",
                     plugins="fake_agent_plugin", FAKE_SCENARIO=str(sc))
    if "bwrap" in result.stderr and "can't run here" in result.stderr:
        pytest.skip(f"bwrap can't run here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    [pair] = pair_files(assay_home).values()
    cand = {t["file"]: (t["base"], t["cross"]) for t in pair["candidate"]["tests"]}
    assert cand["test_new_net.py"] == (True, True), "no network inside the evidence sandbox"
    assert cand["test_new_c1.py"] == (False, True)
    verdict = json.loads((experiment_folder(assay_home) / "verdict.json").read_text())
    assert verdict["panel"][0]["call"]["ready"] == {"baseline": True, "candidate": False}


@pytest.mark.slow
def test_a_side_that_can_t_be_read_leaves_null_evidence_and_names_no_path(assay_home, tmp_path):
    """Spec: a run that 'couldn't be prepared is null, never a failure'; review fix P1: the error
    text of evidence that could not run names no Trial path (the blind page says only that)."""
    make_paired_suite(assay_home)
    data = {**SCENARIO, "gpt-9": {"*": CANDIDATE + ",git_link:/etc/passwd"}}
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--people-reader", "ann",
                               scenario_data=data)
    assert result.returncode == 0, result.stderr
    [pair] = pair_files(assay_home).values()
    assert pair["candidate"]["problem"] == "the Trial's repository could not be read"
    assert pair["candidate"]["tests"] == [] and pair["candidate"]["head"] is None
    assert {t["file"]: (t["base"], t["cross"]) for t in pair["baseline"]["tests"]} == {"test_new_b.py": (False, None)}
    text = (experiment_folder(assay_home) / "pairs" / "pairs__p1--0.json").read_text()
    assert "trials/" not in text and "baseline-0" not in text and "candidate-0" not in text
    from tests.conftest import run_cli
    page = run_cli(assay_home, "experiments", experiment_folder(assay_home).name, "--pair", "pairs__p1--0",
                   "--reader", "ann", "--json", plugins="fake_agent_plugin")
    changes = json.loads(page.stdout)["changes"].values()
    assert "the evidence could not run" in [c["evidence"] for c in changes]
    assert "trials/" not in page.stdout and "candidate" not in page.stdout

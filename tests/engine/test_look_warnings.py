"""Issue 34, whole-CLI: `--add-tasks` says when the added tasks may be unlike the first look's, and
records it in looks.json; the Verdict text names it; a small suite of 1 Trial per task says its
interval is optimistic; the batch plan stands beside "how many more". Fake Harness sessions run as
real subprocesses (tests/fakes/fake_agent.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_verdict_surfaces import console
from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS, experiment, make_factory, make_repo, make_suite, scenario


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def extend(home: Path, sc: Path, exp_id: str, tasks: list[str], *args: str):
    return run_cli(home, "experiment", exp_id, "--add-tasks", ",".join(tasks), *args, plugins=PLUGINS,
                   FAKE_SCENARIO=str(sc))


def looks(home: Path, exp_id: str) -> list[dict]:
    return json.loads((home / "evals" / "experiments" / exp_id / "looks.json").read_text())["looks"]


def grow_suite(home: Path, name: str, numbers: range) -> list[str]:
    """More tasks written into an existing suite after the Experiment started (as a user adds them)."""
    ids = []
    for i in numbers:
        task = home / "evals" / "suites" / name / f"t{i}"
        base, _later = make_repo(task / "repo", {"README": f"task {i}\n"}, {"answer.txt": "right\n"})
        (task / "issue.md").write_text(f"Write the answer for task {i}.\n")
        (task / "task.toml").write_text(f'repository = "repo"\nbase = "{base}"\n[inputs]\nissue = "issue.md"\n')
        ids.append(f"{name}/t{i}")
    return ids


@pytest.mark.slow
def test_tasks_added_from_another_suite_warn_and_the_verdict_names_it(tmp_path: Path, assay_home: Path):
    """Finding: "`--add-tasks` accepts tasks from another, harder suite without a word: a Candidate at
    the margin then passed 31-37% of the time". Now the extension warns, looks.json records it, and
    the Verdict text (the command's, `assay experiments ID`, the Console) names it. With 1 Trial per
    task and 4 Eval tasks, look 1's Verdict says its interval is optimistic; look 2's, judged by the
    confidence sequence, doesn't."""
    factory = make_factory(tmp_path)
    make_suite(assay_home)
    more = make_suite(assay_home, tasks=20, name="more")
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"},
                                        "bad": {"fixture/t1": "wrong", **{t: "wrong" for t in more}, "*": "right"}})
    first = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--trials-per-task", "1")
    assert first.returncode == 0, first.stderr
    assert "Caveat: with 1 Trial per task and 4 Eval tasks (30 or fewer), this 95% interval is optimistic" in first.stdout
    assert "--look-rule confidence-sequence-only" in first.stdout
    exp_id = json.loads(run_cli(assay_home, "experiments", "--json", plugins=PLUGINS).stdout)[0]["id"]

    second = extend(assay_home, sc, exp_id, more[:6])
    assert second.returncode == 0, second.stderr
    said = "look 2 added 6 of its 6 Eval tasks from a suite not in the first look (more)"
    assert f"Warning: {said}: the Verdict assumes every task is drawn like the first look's (fixture)" in second.stderr
    assert f"Warning: {said}" in second.stdout  # the Verdict text at the end names it
    assert "Caveat:" not in second.stdout  # look 2 is judged by the sequence, valid at any size
    recorded = looks(assay_home, exp_id)
    assert recorded[0]["warnings"] == []
    assert [(w["look"], w["kind"]) for w in recorded[1]["warnings"]] == [(2, "other suite")]
    assert recorded[1]["warnings"][0]["text"].startswith(said)
    assert f"Warning: {said}" in run_cli(assay_home, "experiments", exp_id, plugins=PLUGINS).stdout
    data = json.loads(run_cli(assay_home, "experiments", exp_id, "--json", plugins=PLUGINS).stdout)
    assert [w["kind"] for w in data["verdict"]["warnings"]] == ["other suite"]  # the Baselines agree: 100%, 100%
    assert f"Warning: {said}" in console(assay_home).get(f"/experiments/{exp_id}").text


@pytest.mark.slow
def test_added_tasks_the_baseline_fares_differently_on_warn_once_graded(tmp_path: Path, assay_home: Path):
    """Finding: "Nothing warns either when the added tasks' Baseline pass share differs sharply from
    the first look's". Tasks of the same suite (no suite warning) on which the Baseline fails every
    Trial, after it passed every Trial of the first look's: beyond chance (p = 1/210), so looks.json
    and the Verdict text say so; the batch plan is offered beside "how many more"."""
    factory = make_factory(tmp_path)
    make_suite(assay_home)
    sc_path = tmp_path / "s.json"
    first = experiment(assay_home, factory, scenario(sc_path, {"good": {"*": "right"},
                                                                "bad": {"fixture/t1": "wrong", "*": "right"}}),
                       "--candidate-model", "bad", "--json")
    assert first.returncode == 0, first.stderr
    exp_id = last_json(first.stdout)["id"]
    shown = run_cli(assay_home, "experiments", exp_id, plugins=PLUGINS).stdout
    assert "Or a few at a time, the look rule's batch plan: " in shown and " more Eval tasks per look, for up to 4 looks, give a " in shown

    harder = grow_suite(assay_home, "fixture", range(5, 11))
    sc = scenario(sc_path, {"good": {**{t: "wrong" for t in harder}, "*": "right"},
                            "bad": {"fixture/t1": "wrong", **{t: "wrong" for t in harder}, "*": "right"}})
    second = extend(assay_home, sc, exp_id, harder)
    assert second.returncode == 0, second.stderr
    assert "Warning" not in second.stderr  # one suite: nothing to say before the Trials run
    said = ("on the 6 Eval tasks look 2 added, the Baseline's pass share is 0%, against 100% on the first look's 4: "
            "more than chance explains")
    assert f"Warning: {said}" in second.stdout
    recorded = looks(assay_home, exp_id)[1]["warnings"]
    assert [(w["look"], w["kind"]) for w in recorded] == [(2, "baseline share")] and recorded[0]["text"].startswith(said)


def test_an_older_looks_file_reads_with_no_warnings(tmp_path: Path):
    """Looks 2 adds each look's ``warnings``; an Experiment extended before it resumes with none."""
    import datetime as dt

    from assay.storage import files, formats
    from assay.storage.records import Look, Looks

    path = tmp_path / "looks.json"
    old = {"format": 1, "looks": [{"number": 1, "at": "2026-01-01T00:00:00+00:00", "tasks": 4, "added": [],
                                   "verdict": "inconclusive", "interval": [-0.5, 0.2], "decided_by": "credible interval"}]}
    files.write_json(path, old)
    assert formats.read(path, Looks) == Looks((Look(1, dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), 4,
                                                    verdict="inconclusive", interval=(-0.5, 0.2),
                                                    decided_by="credible interval"),))

"""One Trial's page and ``assay experiments ID TRIAL`` read that Trial's own files alone (issue 39:
"A Trial's Console page and `assay experiments ID TRIAL` in constant time whatever the
Experiment's size"; a Trial's page used to build the whole Experiment's description)."""

from __future__ import annotations

import json
from pathlib import Path

from assay.engine.folder import ExperimentDir, Slot
from assay.storage.home import AssayHome

from tests.conftest import run_cli
from tests.console.test_routes import JSON, client
from tests.written_experiments import write_experiment

TRIAL = Slot("written/task-0001", "candidate", 2)


def break_every_other_trial(home: AssayHome, exp_id: str) -> None:
    """A stray folder in each other Trial's slot: reading any of them is an error naming it."""
    exp = ExperimentDir(home.experiments / exp_id)
    for slot in exp.slots(exp.setup().tasks):
        if slot != TRIAL:
            (exp.slot_folder(slot) / "attempt-stray").mkdir()


def test_a_trials_page_reads_only_its_own_trial(assay_home: Path) -> None:
    home = AssayHome(assay_home)
    exp_id = write_experiment(home, 0, 30)
    whole = client(assay_home).get(f"/experiments/{exp_id}", headers=JSON).json()
    shown = [t for t in whole["trials"] if (t["task"], t["arm"], t["index"]) == (TRIAL.task, TRIAL.arm, TRIAL.index)]
    break_every_other_trial(home, exp_id)
    page = client(assay_home).get(f"/experiments/{exp_id}/trials/{TRIAL.task}/{TRIAL.arm}-{TRIAL.index}/0", headers=JSON)
    assert page.status_code == 200, page.text
    assert page.json()["trial"] == shown[0]  # what the Experiment's page lists for it
    assert page.json()["experiment"] == exp_id


def test_experiments_id_trial_shows_its_attempts_from_its_own_files(assay_home: Path) -> None:
    home = AssayHome(assay_home)
    exp_id = write_experiment(home, 0, 30)
    whole = json.loads(run_cli(assay_home, "experiments", exp_id, "--json").stdout)
    break_every_other_trial(home, exp_id)
    done = run_cli(assay_home, "experiments", exp_id, TRIAL.key, "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["id"] == exp_id and shown["trial"] == TRIAL.key
    assert shown["attempts"] == [t for t in whole["trials"] if (t["task"], t["arm"], t["index"]) ==
                                 (TRIAL.task, TRIAL.arm, TRIAL.index)]
    text = run_cli(assay_home, "experiments", exp_id[:6], TRIAL.key)
    assert text.returncode == 0 and f"Trial {TRIAL.key} of Experiment {exp_id}" in text.stdout
    assert "delivered" in text.stdout


def test_an_unknown_trial_is_one_line(assay_home: Path) -> None:
    exp_id = write_experiment(AssayHome(assay_home), 0, 12)
    done = run_cli(assay_home, "experiments", exp_id, "written/task-0000:candidate-9")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"assay: error: no Trial written/task-0000:candidate-9 in Experiment {exp_id} (name it SUITE/TASK:ARM-N, "
        f"as `assay experiments {exp_id}` lists it)"]

"""The Console's blind pair page (issue 18's people, issue 21's page): the Ticket, the checklist, both
changes and their evidence with nothing that names an Arm; sealed merge calls per side, then a
preference, and only then the reveal; the same records as `assay review`."""

from __future__ import annotations

import json
import re

import pytest
from assay.console.app import make_app
from assay.hooks import plugin_manager
from assay.storage.home import AssayHome
from starlette.testclient import TestClient

from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS
from tests.pair_fixtures import experiment_folder, make_paired_suite, paired_experiment

PAIR = "pairs__p1--0"
LEAKS = ("opus-7", "gpt-9", "fake-agent", "baseline", "candidate", "trials/", "judge")


@pytest.mark.slow
def test_a_reader_seals_merge_calls_then_prefers_then_sees_the_reveal(assay_home, tmp_path, monkeypatch):
    make_paired_suite(assay_home)
    assert paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--people-reader", "alice").returncode == 0
    exp = experiment_folder(assay_home)
    monkeypatch.setenv("USER", "alice")
    c = TestClient(make_app(AssayHome(assay_home), plugin_manager.load()), base_url="http://127.0.0.1:8700")
    url = f"/experiments/{exp.name}/pairs/{PAIR}"
    assert f'href="{url}"' in c.get(f"/experiments/{exp.name}").text
    page = c.get(url).text
    for leak in (*LEAKS, str(exp)):
        assert leak not in page.lower(), f"{leak!r} is on the blind page"
    assert "Change A" in page and "Change B" in page and "Seal my merge calls" in page
    shown = c.get(url, headers={"accept": "application/json"}).json()
    cli = json.loads(run_cli(assay_home, "experiments", exp.name, "--pair", PAIR, "--reader", "alice", "--json",
                             plugins=PLUGINS).stdout)
    assert {k: v for k, v in shown.items() if k not in ("experiment", "revealed")} == cli
    token = re.search(r'<meta name="csrf" content="([^"]+)"', page)[1]
    early = c.post(f"{url}/review", data={"csrf": token, "kind": "prefer", "prefer": "A"})
    assert early.status_code == 400 and "seal your merge calls first" in early.text
    half = c.post(f"{url}/review", data={"csrf": token, "kind": "merge", "merge_A": "yes"})
    assert half.status_code == 400 and not list((exp / "reviews").rglob("*.json"))  # nothing half-written
    sealed = c.post(f"{url}/review", data={"csrf": token, "kind": "merge", "merge_A": "yes", "merge_B": "no"})
    assert sealed.status_code == 200 and "Which do you prefer?" in sealed.text
    assert not any(leak in sealed.text.lower() for leak in LEAKS)  # still blind: no reveal before the preference
    again = c.post(f"{url}/review", data={"csrf": token, "kind": "merge", "merge_A": "no", "merge_B": "no"})
    assert again.status_code == 400 and "sealed" in again.text
    revealed = c.post(f"{url}/review", data={"csrf": token, "kind": "prefer", "prefer": "A", "rubric": "clarity=4"})
    assert revealed.status_code == 200 and "Revealed" in revealed.text
    assert "baseline" in revealed.text.lower() and "candidate" in revealed.text.lower()
    records = [json.loads(p.read_text()) for p in sorted((exp / "reviews").rglob("*.json"))]
    assert [(r["reader"], r["kind"], r["blind"]) for r in records] == [("alice", "merge", True), ("alice", "preference", True)]
    assert records[1]["rubric"] == {"clarity": 4}

"""The Console's Scores and Bug-origin pages and their forms: the same actions as their CLI
commands, refusing bad input with a message and writing nothing half."""

from __future__ import annotations

import json
import re

from assay.console.app import make_app
from assay.hooks import plugin_manager
from assay.scoring.github import GitHub
from assay.storage.home import AssayHome
from starlette.testclient import TestClient

from tests.scoring_fixtures import RUN, score, world  # noqa: F401 - world is a fixture

JSON = {"accept": "application/json"}
PLUGGED = plugin_manager.load()  # the built-in plugins: suite kinds and Graders


def console(assay_home, world) -> TestClient:  # noqa: F811
    gh = str(world["bin"] / "gh")
    return TestClient(make_app(AssayHome(assay_home), PLUGGED, github=lambda: GitHub(gh)), base_url="http://localhost:8700")


def csrf(c: TestClient, url: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', c.get(url).text)[1]


def test_the_scores_form_hides_the_models_until_all_five_then_shows_both(assay_home, world):  # noqa: F811
    assert score(assay_home, world, *RUN).returncode == 0
    c = console(assay_home, world)
    listing = c.get("/scores", headers=JSON).json()
    assert listing == json.loads(score(assay_home, world, "scores", "--json").stdout)
    url = "/scores/acme%2Fapp%239"
    page = c.get(url).text
    assert "hidden until all five" in page and "Correct judged" not in page and 'name="why_correct"' in page
    token = csrf(c, url)
    bad = c.post(f"{url}/mine", data={"csrf": token, "correct": "pass"})  # no reason
    assert bad.status_code == 400 and "say why" in bad.text
    assert not list(assay_home.glob("evals/scoring/pulls/*9/mine.json"))  # nothing half-written
    form = {"csrf": token, **{c_.lower(): "pass" for c_ in ("Correct", "Scoped", "Tested", "Honest", "Standards")},
            **{f"why_{c_.lower()}": "fine" for c_ in ("Correct", "Scoped", "Tested", "Honest", "Standards")}}
    done = c.post(f"{url}/mine", data=form, follow_redirects=True)
    assert done.status_code == 200 and "Correct judged by" in done.text and 'name="why_correct"' not in done.text
    assert c.get(url, headers=JSON).json() == json.loads(score(assay_home, world, "scores", "acme/app#9", "--json").stdout)


def test_the_bug_origin_form_confirms_or_rejects_as_the_cli_does(assay_home, world, monkeypatch):  # noqa: F811
    assert score(assay_home, world, *RUN).returncode == 0
    monkeypatch.setenv("FAKE_GH_WORLD", str(world["path"]))  # the Console asks the same gh
    c = console(assay_home, world)
    assert c.get("/bug-origins", headers=JSON).json() == json.loads(score(assay_home, world, "bug-origins", "--json").stdout)
    url = "/bug-origins/acme%2Fapp%23120"
    assert "Confirm</button>" in c.get(url).text
    token = csrf(c, url)
    assert c.post(url, data={"csrf": token, "action": "maybe"}).status_code == 400
    confirmed = c.post(url, data={"csrf": token, "action": "confirm"}, follow_redirects=True)
    assert confirmed.status_code == 200, confirmed.text[-600:]
    assert "assay approve bug-acme-app-120" in confirmed.text
    assert c.get("/bug-origins", headers=JSON).json()["counted_against"] == {"claude/claude-opus-5": 1}
    none = c.post("/bug-origins/acme%2Fapp%23122", data={"csrf": token, "action": "none"}, follow_redirects=True)
    assert none.status_code == 200 and c.get("/bug-origins/acme%2Fapp%23122", headers=JSON).json()["state"] == "none"
    assert c.get("/bug-origins/acme%2Fapp%23999").status_code == 404


def test_a_confirmed_bug_origins_eval_task_is_approved_from_the_console(assay_home, world, monkeypatch):  # noqa: F811
    """`assay proposals` and `assay approve` from the Console: listed with their problems, approved
    only once valid (a missing suite is refused, nothing moved)."""
    assert score(assay_home, world, *RUN).returncode == 0
    monkeypatch.setenv("FAKE_GH_WORLD", str(world["path"]))
    c = console(assay_home, world)
    token = csrf(c, "/bug-origins/acme%2Fapp%23120")
    c.post("/bug-origins/acme%2Fapp%23120", data={"csrf": token, "action": "confirm"})
    listed = c.get("/proposals", headers=JSON).json()["proposals"]
    assert listed == json.loads(score(assay_home, world, "proposals", "--json").stdout)
    assert [p["name"] for p in listed] == ["bug-acme-app-120"] and not listed[0]["valid"]  # no code-review suite yet
    refused = c.post("/proposals/bug-acme-app-120/approve", data={"csrf": token})
    assert refused.status_code == 400 and (assay_home / "evals" / "proposals" / "bug-acme-app-120").is_dir()
    (assay_home / "evals" / "suites" / "code-review").mkdir(parents=True)
    (assay_home / "evals" / "suites" / "code-review" / "suite.toml").write_text('kind = "code-review"\n')
    assert "Approve</button>" in c.get("/proposals").text
    approved = c.post("/proposals/bug-acme-app-120/approve", data={"csrf": token}, follow_redirects=True)
    assert approved.status_code == 200 and "No proposals waiting" in approved.text
    assert (assay_home / "evals" / "suites" / "code-review" / "bug-acme-app-120" / "task.toml").is_file()

"""The Console's Scores and Bug-origin pages and their forms: the same actions as their CLI
commands, refusing bad input with a message and writing nothing half."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from assay.console.app import make_app
from assay.hooks import plugin_manager
from assay.scoring.github import GitHub
from assay.storage.home import AssayHome
from starlette.testclient import TestClient

from tests.conftest import wait_for
from tests.scoring_fixtures import (  # noqa: F401 - world, scored and scored_once are fixtures
    RUN, score, score_in_background, scored, scored_once, seats, world)

JSON = {"accept": "application/json"}
PLUGGED = plugin_manager.load()  # the built-in plugins: suite kinds and Graders


def console(assay_home, world) -> TestClient:  # noqa: F811
    gh = str(world["bin"] / "gh")
    return TestClient(make_app(AssayHome(assay_home), PLUGGED, github=lambda: GitHub(gh)), base_url="http://localhost:8700")


def csrf(c: TestClient, url: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', c.get(url).text)[1]


@pytest.mark.slow
def test_the_scores_form_hides_the_models_until_all_five_then_shows_both(assay_home, scored):  # noqa: F811
    world, run = scored  # the world after one Scoring run, made once
    assert run.returncode == 0
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


@pytest.mark.slow
def test_the_bug_origin_form_confirms_or_rejects_as_the_cli_does(assay_home, scored):  # noqa: F811
    world, run = scored  # the world after one Scoring run, made once
    assert run.returncode == 0
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


@pytest.mark.slow
def test_a_confirmed_bug_origins_eval_task_is_approved_from_the_console(assay_home, scored):  # noqa: F811
    """`assay proposals` and `assay approve` from the Console: listed with their problems, approved
    only once valid (a missing suite is refused, nothing moved)."""
    world, run = scored  # the world after one Scoring run, made once
    assert run.returncode == 0
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


@pytest.mark.slow
def test_a_scoring_run_page_shows_it_live_and_its_stop_stops_it(assay_home, world):  # noqa: F811
    """Spec 978 US5: "I want the Console to show a Scoring run live, and let me Stop it, as it does
    any Command." The page and its JSON twin equal `assay scoring-runs ID --json`."""
    seats(assay_home, "fake-scorer:slow30-claude-9", "fake-scorer:slow30-gpt-9")
    running = score_in_background(assay_home, world, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    wait_for(lambda: list(assay_home.glob("evals/scoring/pulls/*/session-0/session.log")))
    c = console(assay_home, world)
    [row] = c.get("/scoring-runs", headers=JSON).json()["scoring_runs"]
    assert row["state"] == "running" and row == json.loads(score(assay_home, world, "scoring-runs", "--json").stdout)[
        "scoring_runs"][0]
    url = f"/scoring-runs/{row['id']}"
    page = c.get(url)
    assert "Stop</button>" in page.text and "data-live=" in page.text and "data-still-live" in page.text
    shown = c.get(url, headers=JSON).json()
    assert shown == json.loads(score(assay_home, world, "scoring-runs", row["id"], "--json").stdout)
    assert len(shown["sample"]) == 5 and {p["state"] for p in shown["sample"]} == {"not scored yet"}
    token = csrf(c, url)
    stopped = c.post(f"{url}/stop", data={"csrf": token}, follow_redirects=True)
    assert stopped.status_code == 200 and "Stop</button>" not in stopped.text and "stopped" in stopped.text
    out, _ = running.communicate(timeout=60)
    assert running.returncode == 3 and json.loads(out)["stopped"] == "stopped"
    assert "data-still-live" not in c.get(f"{url}?fragment=live").text  # the live part stops asking
    again = c.post(f"{url}/stop", data={"csrf": token})
    assert again.status_code == 409 and "is not running" in again.text
    assert c.get("/scoring-runs/s-nope").status_code == 404


@pytest.mark.slow
def test_a_finished_scoring_run_shows_what_became_of_each_pull_request(assay_home, world):  # noqa: F811
    data = world["data"]
    for p in data["pulls"]:
        if p["number"] == 1:
            p["merge_commit_sha"] = "0" * 40  # its packet can't be built
    world["path"].write_text(json.dumps(data))
    shown = json.loads(score(assay_home, world, *RUN).stdout)
    c = console(assay_home, world)
    page = c.get(f"/scoring-runs/{shown['id']}", headers=JSON).json()
    states = {p["key"]: p["state"] for p in page["sample"]}
    assert states.pop("acme/app#1").startswith("not graded, tried again next run: its packet could not be built")
    assert set(states.values()) == {"scored"} and page["outcome"] == "incomplete" and not page["running"]
    assert page["summary"].startswith(f"{len(states)} of {len(states) + 1} sampled scored")
    text = score(assay_home, world, "scoring-runs", shown["id"]).stdout
    assert "acme/app#9 (yours)" in text and "not graded, tried again next run" in text
    inbox = c.get("/").text
    assert f'<a href="/scoring-runs/{shown["id"]}">' in inbox

"""The Scoring run through the whole CLI, against a fake ``gh`` on PATH and a fake Grader Harness
(scoring-run spec, Testing Decisions, Seam 1)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from assay.storage.files import exclusive_lock

from tests.conftest import cli_env, wait_for
from tests.experiment_fixtures import PLUGINS
from tests.sandbox_fixtures import bwrap_unavailable
from tests.scoring_fixtures import (  # noqa: F401 - world, scored and scored_once are fixtures
    CLAUDE,
    RUN,
    score,
    score_in_background,
    scored,
    scored_once,
    seats,
    world,
)
from tests.terminal import on_terminal


@pytest.mark.slow  # a whole Scoring run with Grader sessions of two families (~25 s under load)
@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_run_samples_across_setups_grades_blind_from_another_family_and_lists_scores(assay_home, world, sandbox):
    """The whole run, once under real bwrap too, where the packet is read-only to the Grader (issue 31:
    "read-only for the Grader (today the packet folder is bound read-write)")."""
    if sandbox == "bwrap" and (reason := bwrap_unavailable()):
        pytest.skip(reason)
    run = RUN if sandbox == "none" else ("score", "--seed", "7", "--json")  # bwrap is the default
    result = score(assay_home, world, *run)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    # about `size`, spread across both setups; no security fix, no unstamped PR; and the first run adds
    # past ones for you to score (#9, merged before the window), which the Grader scores too
    assert len(shown["sample"]) == 5 and len(shown["scored"]) == 5 and shown["left"] == []
    if sandbox == "bwrap":
        for seen in assay_home.glob("evals/scoring/pulls/*/session-0/home/seen"):
            assert (seen / "repo-writable.txt").read_text() == "no: Read-only file system"
    numbers = {int(k.rsplit("#", 1)[1]) for k in shown["sample"]}
    assert numbers - {9} <= {1, 2, 3, 4, 5, 6} and 9 in numbers and {n % 2 for n in numbers - {9}} == {0, 1}
    listing = json.loads(score(assay_home, world, "scores", "--json").stdout)
    [week] = listing["weeks"]  # spec 978 I28: "lists the sample by week"
    assert week["run"] == shown["id"] and week["window"] == [t.replace(" ", "T") for t in shown["window"]]
    pulls = week["pulls"]
    assert sorted(p["key"] for p in pulls) == sorted(shown["sample"]) and {p["state"] for p in pulls} == {"scored"}
    assert listing["waiting_for_you"] == ["acme/app#9"]
    versions = listing["by_harness_version"]  # so a drop after a Harness updates itself shows
    assert set(versions) == {"claude 2.1.197", "codex (no version)"} and versions["claude 2.1.197"]["Honest"].startswith("0/")
    for p in pulls:
        if p["key"] == "acme/app#9":
            assert p["model"] is None and p["grader"] is None  # hidden until yours are in
            continue
        # the Grader never runs on the builder's family
        assert p["grader"] == ("fake-scorer:gpt-9" if "claude" in p["built_with"] else "fake-scorer:claude-sonnet-9")
        assert p["model"]["Correct"] == {"passed": True, "why": f"Correct judged by {p['grader'].split(':')[1]}"}
        assert p["model"]["Honest"]["passed"] is False  # "All tests pass" with lint failing
        assert set(p["model"]) == {"Correct", "Scoped", "Tested", "Honest", "Standards"}
    claude = next(p["key"] for p in pulls if p["built_with"].startswith("claude") and p["model"])
    codex = next(p["key"] for p in pulls if p["built_with"].startswith("codex"))
    one = json.loads(score(assay_home, world, "scores", claude, "--json").stdout)
    assert one["pull"]["version"] == "2.1.197" and one["pull"]["effort"] == "high"
    assert json.loads(score(assay_home, world, "scores", codex, "--json").stdout)["pull"]["version"] is None
    shown_one = score(assay_home, world, "scores", claude)
    assert "Honest" in shown_one.stdout and "fail" in shown_one.stdout and "graded by fake-scorer:gpt-9" in shown_one.stdout


@pytest.mark.slow
def test_a_second_window_scores_nothing_twice(assay_home, scored):
    world, run = scored  # the world after one Scoring run, made once
    assert run.returncode == 0
    again = score(assay_home, world, *RUN)
    assert again.returncode == 0, again.stderr
    shown = json.loads(again.stdout)
    assert shown["sample"] == [] and shown["scored"] == []
    runs = sorted((json.loads(p.read_text()) for p in assay_home.glob("evals/scoring/runs/*.json")),
                  key=lambda r: r["started_at"])
    assert runs[1]["window_start"] == runs[0]["window_end"]  # no gap, no overlap


@pytest.mark.slow
def test_a_plan_limit_stops_the_run_and_the_rest_carries_over(assay_home, world):
    seats(assay_home, "fake-scorer:limit-claude-9", "fake-scorer:limit-gpt-9")
    stopped = score(assay_home, world, *RUN)
    assert stopped.returncode == 3, stopped.stderr
    shown = json.loads(stopped.stdout)
    assert shown["scored"] == [] and len(shown["left"]) == 5 and "plan limit" in shown["stopped"]
    assert len(list(assay_home.glob("evals/scoring/pulls/*/session-0"))) == 1  # it stopped at the first
    inbox = json.loads(score(assay_home, world, "inbox", "--json").stdout)
    assert any(r["kind"] == "scoring" for r in inbox["needs_you"])
    seats(assay_home)
    resumed = json.loads(score(assay_home, world, *RUN).stdout)
    # no new pull request merged since: carried ones fill the sample (size 4), oldest first, the fifth waits
    assert resumed["scored"] == shown["left"][:4] and resumed["left"] == []
    last = json.loads(score(assay_home, world, *RUN).stdout)
    assert last["scored"] == shown["left"][4:]
    # by week, newest first: each pull request under the run that scored it; the stopped run's week is empty
    weeks = json.loads(score(assay_home, world, "scores", "--json").stdout)["weeks"]
    assert [w["run"] for w in weeks] == [last["id"], resumed["id"], shown["id"]]
    assert [sorted(p["key"] for p in w["pulls"]) for w in weeks] == [last["scored"], sorted(resumed["scored"]), []]
    text = score(assay_home, world, "scores").stdout
    assert text.index(f"Scoring run {last['id']})") < text.index(f"Scoring run {resumed['id']})") < text.index(
        f"Scoring run {shown['id']})")


@pytest.mark.slow
def test_a_pull_request_whose_packet_cant_be_built_is_left_and_the_others_are_scored(assay_home, world):
    data = world["data"]
    for p in data["pulls"]:
        if p["number"] % 2:
            p["merge_commit_sha"] = "0" * 40  # the Claude-built ones name a commit the repository doesn't have
    world["path"].write_text(json.dumps(data))
    result = score(assay_home, world, *RUN)
    shown = json.loads(result.stdout)
    odd = [k for k in shown["sample"] if int(k.rsplit("#", 1)[1]) % 2]
    assert odd and sorted(shown["left"]) == sorted(odd) and sorted(shown["scored"]) == sorted(set(shown["sample"]) - set(odd))
    log = next(assay_home.glob("logs/scoring/*.log")).read_text()
    assert all(f"{k}: its packet could not be built" in log for k in odd)
    # it graded less than it sampled, and says so (issue 31: "the run still said `done`")
    assert result.returncode == 4 and shown["outcome"] == "incomplete" and sorted(shown["not_graded"]) == sorted(odd)


@pytest.mark.slow
def test_your_scores_hide_the_models_until_all_five_are_in(assay_home, scored):
    """Scoring-run spec, stories 27-28: the first run marks past pull requests for you; the model's
    Scores stay hidden until you've entered all five of yours, then both show."""
    world, run = scored  # the world after one Scoring run, made once
    assert run.returncode == 0
    key = "acme/app#9"
    assert json.loads(score(assay_home, world, "scores", key, "--json").stdout)["model"] is None
    partial = score(assay_home, world, "scores", key, "--mine", "--correct", "pass", "--why", "Correct=it rounds up")
    assert partial.returncode == 0 and "still to score: Scoped, Tested, Honest, Standards" in partial.stdout
    assert "Correct judged" not in partial.stdout and "hidden until" in partial.stdout
    for bad, why in [(("--tested", "maybe", "--why", "Tested=x"), "--tested 'maybe': expected pass or fail"),
                     (("--tested", "pass"), "--tested pass: say why with --why Tested=REASON"),
                     (("--why", "Speed=fast"), "--why 'Speed=fast': expected CRITERION=REASON")]:
        refused = score(assay_home, world, "scores", key, "--mine", *bad)
        assert refused.returncode == 2 and why in refused.stderr and refused.stderr.count("\n") == 1, refused.stderr
    assert "Tested" not in json.loads((next(assay_home.glob("evals/scoring/pulls/*9/mine.json"))).read_text())["criteria"]
    done = score(assay_home, world, "scores", key, "--mine", "--scoped", "pass", "--tested", "fail", "--honest", "pass",
                 "--standards", "pass", "--why", "Scoped=small", "--why", "Tested=no test", "--why", "Honest=fair",
                 "--why", "Standards=fine", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["model"]["Tested"]["passed"] is True and shown["mine"]["Tested"] == {"passed": False, "why": "no test"}
    listing = json.loads(score(assay_home, world, "scores", "--json").stdout)
    assert listing["waiting_for_you"] == []
    tested = next(c for c in listing["calibration"] if c["criterion"] == "Tested")
    assert (tested["matched"], tested["compared"], tested["calibrated"]) == (0, 1, False)
    assert score(assay_home, world, "scores", "acme/app#404", "--mine", "--correct", "pass",
                 "--why", "Correct=x").returncode == 2


@pytest.mark.slow
def test_bug_origins_are_proposed_then_confirmed_corrected_or_rejected_and_a_confirmed_one_proposes_an_eval_task(
        assay_home, scored):
    """Scoring-run spec, stories 32-39: every bug issue closed (all of them the first time; never a
    security fix) gets a proposal naming the introducing commit only if the history shows it, mapped
    to its pull request and what built it; nothing counts until you settle it."""
    world, run = scored  # the world after one Scoring run, made once
    result = json.loads(run.stdout)
    assert result["bug_origins_proposed"] == 2
    listed = json.loads(score(assay_home, world, "bug-origins", "--json").stdout)
    assert [b["key"] for b in listed["bug_origins"]] == ["acme/app#120", "acme/app#122"]  # no security fix
    assert listed["counted_against"] == {}  # nothing counts until you settle it
    bug = json.loads(score(assay_home, world, "bug-origins", "acme/app#120", "--json").stdout)
    assert bug["state"] == "proposed" and bug["proposed"]["commit"] == world["data"]["commits"][1]
    assert bug["proposed"]["pull"] == "acme/app#20" and bug["proposed"]["built_with"] == CLAUDE
    old = json.loads(score(assay_home, world, "bug-origins", "acme/app#122", "--json").stdout)
    assert old["proposed"] is None and "no commit closed the issue" in old["why"]
    refused = score(assay_home, world, "bug-origins", "acme/app#122", "--confirm")
    assert refused.returncode == 2 and "no proposal to confirm" in refused.stderr
    (assay_home / "evals" / "suites" / "code-review").mkdir(parents=True)
    (assay_home / "evals" / "suites" / "code-review" / "suite.toml").write_text('kind = "code-review"\n')
    confirmed = score(assay_home, world, "bug-origins", "acme/app#120", "--confirm")
    assert confirmed.returncode == 0, confirmed.stderr
    assert "assay approve bug-acme-app-120" in confirmed.stdout
    approved = score(assay_home, world, "approve", "bug-acme-app-120")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    task = (assay_home / "evals" / "suites" / "code-review" / "bug-acme-app-120" / "task.toml").read_text()
    assert world["data"]["commits"][1] in task and "DRAFT" in task
    assert json.loads(score(assay_home, world, "bug-origins", "--json").stdout)["counted_against"] == {
        "claude/claude-opus-5": 1}
    score(assay_home, world, "bug-origins", "acme/app#122", "--none")
    assert json.loads(score(assay_home, world, "bug-origins", "--json").stdout)["counted_against"] == {
        "claude/claude-opus-5": 1}  # a rejected one counts for nothing
    corrected = json.loads(score(assay_home, world, "bug-origins", "acme/app#122", "--correct", "#20", "--json").stdout)
    assert corrected["state"] == "confirmed" and corrected["settled"]["pull"] == "acme/app#20"
    again = json.loads(score(assay_home, world, *RUN).stdout)
    assert again["bug_origins_proposed"] == 0  # nothing traced twice


@pytest.mark.slow
def test_a_commit_the_history_does_not_show_is_never_proposed(assay_home, world):
    """Story 34: a session that names a commit outside the history before the fix proposes nothing."""
    seats(assay_home, "fake-scorer:guesser", "fake-scorer:gpt-9")
    assert score(assay_home, world, *RUN).returncode == 0
    bug = json.loads(score(assay_home, world, "bug-origins", "acme/app#120", "--json").stdout)
    assert bug["state"] == "proposed" and bug["proposed"] is None and "not a commit before the fix" in bug["why"]


@pytest.mark.slow
def test_a_killed_run_leaves_its_scores_and_the_next_run_scores_the_rest_once(assay_home, world):
    """Issue 20 acceptance, a killed run resumed: kill -9 while the second pull request is being
    graded; the next run scores what was left (nothing twice), and the killed Command isn't running."""
    seats(assay_home, "fake-scorer:slow3-claude-9", "fake-scorer:slow3-gpt-9")
    first = score_in_background(assay_home, world, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    wait_for(lambda: list(assay_home.glob("evals/scoring/pulls/*/scores.json")))
    time.sleep(1)  # into the second pull request's session
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    before = {p.parent.name: json.loads(p.read_text())["run"] for p in assay_home.glob("evals/scoring/pulls/*/scores.json")}
    assert 1 <= len(before) < 5
    seats(assay_home)
    resumed = score(assay_home, world, *RUN)
    assert resumed.returncode == 0, resumed.stderr
    shown = json.loads(resumed.stdout)
    after = {p.parent.name: json.loads(p.read_text())["run"] for p in assay_home.glob("evals/scoring/pulls/*/scores.json")}
    assert len(after) == 5 and all(after[k] == run for k, run in before.items())  # none scored twice
    assert len(shown["scored"]) == 5 - len(before)
    records = [json.loads(p.read_text()) for p in assay_home.glob("logs/scoring/*.json")]
    killed = next(r for r in records if r["id"] != shown["id"])
    inbox = json.loads(score(assay_home, world, "inbox", "--json").stdout)
    assert [r["state"] for r in inbox["needs_you"] if r["id"] == killed["id"]] == ["interrupted"]


@pytest.mark.slow
def test_assay_stop_stops_a_scoring_run_and_the_next_takes_up_the_rest(assay_home, world):
    """Issue 20: a Scoring run is a Command like an Experiment, so `assay stop` stops it (the session
    in flight is cut short); it lands in Needs you as stopped, and the next run scores the rest."""
    seats(assay_home, "fake-scorer:slow30-claude-9", "fake-scorer:slow30-gpt-9")
    running = score_in_background(assay_home, world, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    wait_for(lambda: list(assay_home.glob("evals/scoring/pulls/*/session-0/session.log")))
    [record] = [json.loads(p.read_text()) for p in assay_home.glob("logs/scoring/*.json")]
    stopped = score(assay_home, world, "stop", record["id"])
    assert stopped.returncode == 0 and f"Stopped Scoring run {record['id']}" in stopped.stdout, stopped.stderr
    out, _ = running.communicate(timeout=60)
    assert running.returncode == 3 and json.loads(out)["stopped"] == "stopped"
    assert not list(assay_home.glob("evals/scoring/pulls/*/scores.json"))
    inbox = json.loads(score(assay_home, world, "inbox", "--json").stdout)
    assert [r["state"] for r in inbox["needs_you"] if r["id"] == record["id"]] == ["stopped"]
    seats(assay_home)
    resumed = json.loads(score(assay_home, world, *RUN).stdout)
    assert len(resumed["scored"]) == 4 and len(json.loads(score(assay_home, world, *RUN).stdout)["scored"]) == 1


@pytest.mark.slow
def test_on_a_terminal_mine_asks_for_each_criterion_then_shows_the_models(assay_home, scored):
    """`assay scores PR --mine` alone, on a terminal, asks for each criterion and its reason; the
    model's Scores show only after the fifth."""
    _, run = scored  # the world after one Scoring run, made once
    assert run.returncode == 0
    answers = [(f"{name} (pass/fail)".encode(), verdict) for name, verdict in
               (("Correct", "pass"), ("Scoped", "pass"), ("Tested", "fail"), ("Honest", "fail"), ("Standards", "pass"))]
    answers = [step for prompt, verdict in answers for step in ((prompt, verdict), (b"why", f"my reason {verdict}"))]
    env = cli_env(assay_home, PLUGINS)
    code, text = on_terminal([sys.executable, "-m", "assay", "scores", "acme/app#9", "--mine"], env, answers)
    assert code == 0, text
    assert text.index("Standards (pass/fail)") < text.index("Correct judged by")  # shown only after all five
    mine = json.loads(next(assay_home.glob("evals/scoring/pulls/*9/mine.json")).read_text())
    assert mine["criteria"]["Tested"] == {"passed": False, "why": "my reason fail"} and mine["complete_at"]


def test_a_run_is_skipped_while_another_runs(assay_home, world):
    with exclusive_lock(assay_home / "evals" / "scoring" / "run.lock"):
        result = score(assay_home, world, *RUN)
    assert result.returncode == 0 and json.loads(result.stdout)["skipped"] is True
    assert not list(assay_home.glob("evals/scoring/runs/*.json"))


def test_a_failed_run_lands_in_needs_you(assay_home, world):
    world["path"].write_text(json.dumps({**world["data"], "search_fails": True}))  # GitHub's search answers 404
    result = score(assay_home, world, *RUN)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("assay: error:")
    inbox = json.loads(score(assay_home, world, "inbox", "--json").stdout)
    assert [r["outcome"] for r in inbox["needs_you"] if r["kind"] == "scoring"] == ["errored"]


@pytest.mark.parametrize("logged_in, why", [(None, "'gh' is not on PATH"), (False, "gh is not logged in")])
def test_a_missing_or_logged_out_gh_is_one_line(assay_home, world, logged_in, why):
    if logged_in is None:
        (world["bin"] / "gh").unlink()
    else:
        world["path"].write_text(json.dumps({**world["data"], "logged_in": False}))
    result = score(assay_home, world, *RUN)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and why in result.stderr, result.stderr
    assert not (assay_home / "logs" / "scoring").exists()


def test_built_with_lines_are_written_and_read_with_and_without_a_version():
    """Scoring-run spec, Seam 3: the reader takes what the writer writes, with and without a version."""
    from assay.scoring.builtwith import BuiltWith, read

    for built in (BuiltWith("claude", "claude-opus-5", "high", "2.1.197"), BuiltWith("codex", "gpt-5.5", "medium")):
        assert read(f"Some text.\n\n{built.line()}\n") == built
    assert read("Built with care.") is None


def gh_call(argv: list[str]) -> str:
    """A logged `gh` call as docs/scoring.md lists it: owners, repositories, numbers and commits as names."""
    if argv[:2] == ["auth", "status"]:
        return "gh auth status"
    if argv[1] == "graphql":
        name = re.search(r"query (\w+)", argv[3])[1]
        return f"gh api graphql ({name})"
    path = re.sub(r"/[0-9a-f]{40}(?=/|$)", "/SHA", re.sub(r"^repos/[^/]+/[^/]+", "repos/OWNER/REPO", argv[3]))
    path = re.sub(r"/\d+(?=/|$)", "/N", path)
    if path == "search/issues":
        query = next(a for a in argv if a.startswith("q="))
        path += f" ({query[2:].split()[0]})"
    return f"gh api {path}" + (" -H 'Accept: application/vnd.github.diff'" if "-H" in argv else "")


@pytest.mark.slow
def test_docs_list_every_gh_call_a_run_makes(assay_home, world):
    """Issue 31: "docs/scoring.md doesn't say which `gh api` calls the Scoring run makes ... List the
    calls (they are its whole contract with GitHub)": the calls a whole run and settling its Bug
    origins make are exactly those listed."""
    assert score(assay_home, world, *RUN).returncode == 0
    (assay_home / "evals" / "suites" / "code-review").mkdir(parents=True)
    (assay_home / "evals" / "suites" / "code-review" / "suite.toml").write_text('kind = "code-review"\n')
    assert score(assay_home, world, "bug-origins", "acme/app#120", "--confirm").returncode == 0
    assert score(assay_home, world, "bug-origins", "acme/app#122", "--correct", "#20").returncode == 0
    made = {gh_call(json.loads(line)) for line in world["log"].read_text().splitlines()}
    docs = (Path(__file__).parents[2] / "docs" / "scoring.md").read_text()
    section = docs[docs.index("## What it asks GitHub"):]
    listed = set(re.findall(r"^\| `(gh [^`]+)` \|", section, re.MULTILINE))
    assert made == listed

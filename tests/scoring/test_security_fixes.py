"""No Security fix reaches a Grader or a Bug-origin session (issue 31; scoring-run spec, stories
12, 39, 48; ADR 0015): every issue a pull request closes is checked, as GitHub records the link and
as its body names it, and every pull request a Bug-origin session would see."""

from __future__ import annotations

import json

import pytest

from tests.scoring_fixtures import RUN, score, seats, world  # noqa: F401 - world is a fixture


def security_issue(number: int) -> dict:
    return {"repo": "acme/app", "number": number, "title": "A hole", "body": "SECRET DETAILS", "labels": ["security-fix"]}


@pytest.mark.slow
def test_a_pull_request_closing_any_security_fix_is_never_sampled(assay_home, world):
    """Issue 31: "Only a PR's first `Fixes #N` is read, so a PR closing `#200, #201` (with #201
    labelled security-fix) was sampled and graded"; read every closing reference GitHub records for
    the PR (the closing-issues link, not only the body's first keyword)."""
    data = world["data"]
    pulls = {p["number"]: p for p in data["pulls"]}
    pulls[1]["body"] = pulls[1]["body"].replace("Fixes #101", "Fixes #101, fixes #201")  # the second keyword
    pulls[1]["closes"] = [101, 201]
    pulls[2]["closes"] = [102, 202]  # linked on GitHub by hand; the body names only #102
    pulls[3]["body"] = pulls[3]["body"].replace("Fixes #103", "Fixes #103 and acme/app#203")  # a list, by its repo
    data["issues"] += [security_issue(n) for n in (201, 202, 203)]
    world["path"].write_text(json.dumps(data))
    shown = json.loads(score(assay_home, world, *RUN).stdout)
    assert shown["sample"] and not {"acme/app#1", "acme/app#2", "acme/app#3"} & set(shown["sample"])
    for packet in assay_home.glob("evals/scoring/pulls/*/packet/packet.md"):
        assert "SECRET DETAILS" not in packet.read_text()


@pytest.mark.slow
def test_a_bug_whose_fix_is_a_security_fix_never_reaches_a_session(assay_home, world):
    """Issue 31: "a Bug-origin session got the fix diff of a security-fix-labelled PR because only the
    bug issue's own label was checked"; bug #120 (labelled only bug) was closed by the merge commit
    of #7, which closes security-fix #107."""
    data = world["data"]
    next(p for p in data["pulls"] if p["number"] == 7)["merge_commit_sha"] = data["commits"][2]
    world["path"].write_text(json.dumps(data))
    assert score(assay_home, world, *RUN).returncode == 0
    listed = json.loads(score(assay_home, world, "bug-origins", "--json").stdout)["bug_origins"]
    assert [b["key"] for b in listed] == ["acme/app#122"]  # #120 is forgotten, #121 never recorded
    assert not (assay_home / "evals" / "scoring" / "bugs" / "acme__app__120").exists()
    asked = [json.loads(line) for line in world["log"].read_text().splitlines()]
    assert not [a for a in asked if f"repos/acme/app/commits/{data['commits'][2]}" in a]  # its fix.patch never fetched
    log = next(assay_home.glob("logs/scoring/*.log")).read_text()
    assert "Bug origin of acme/app#120: a Security fix: " in log and "acme/app#7 closes acme/app#107" in log


@pytest.mark.slow
def test_a_pull_request_labelled_after_it_was_drawn_never_reaches_a_grader(assay_home, world):
    """Story 48 ("no Security fix in any packet"): a pull request carried over is checked again when
    it is graded; one whose issue is now labelled security-fix is dropped, and its packet removed."""
    seats(assay_home, "fake-scorer:limit-claude-9", "fake-scorer:limit-gpt-9")
    first = json.loads(score(assay_home, world, *RUN).stdout)
    key = first["left"][0]  # the one whose packet the plan-limit stop left behind
    assert list(assay_home.glob("evals/scoring/pulls/*/packet/packet.md"))
    data = world["data"]
    issue = next(i for i in data["issues"] if i["number"] == 100 + int(key.rsplit("#", 1)[1]))
    issue["labels"] = ["bug", "security-fix"]
    world["path"].write_text(json.dumps(data))
    seats(assay_home)
    second = score(assay_home, world, *RUN)
    shown = json.loads(second.stdout)
    assert key in shown["sample"] and key not in shown["scored"] and key not in shown["left"]
    assert shown["dropped"][key].startswith(f"a Security fix: {key} closes acme/app#")
    folder = assay_home / "evals" / "scoring" / "pulls" / key.replace("/", "__").replace("#", "__")
    assert not (folder / "packet").exists() and not (folder / "scores.json").exists()

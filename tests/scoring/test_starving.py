"""The sample can't starve (issue 31; scoring-run spec, Implementation: "Unscored pull requests
carry over"): a pull request two runs could not grade is dropped with why, in Needs you; carried
ones take at most half the sample; a run that graded less than it sampled says so."""

from __future__ import annotations

import json

import pytest

from tests.scoring_fixtures import CLAUDE, CODEX, RUN, pull, score, world  # noqa: F401 - world is a fixture


def runs(assay_home) -> list[dict]:
    return sorted((json.loads(p.read_text()) for p in assay_home.glob("evals/scoring/runs/*.json")),
                  key=lambda r: r["started_at"])


def needs_you(assay_home, world, run_id: str) -> dict:
    inbox = json.loads(score(assay_home, world, "inbox", "--json").stdout)
    return next(r for r in inbox["needs_you"] if r["id"] == run_id)


@pytest.mark.slow
def test_a_pull_request_that_fails_twice_is_dropped_and_new_ones_are_drawn(assay_home, world):
    """Issue 31: "two PRs whose packet can never be built refilled a sample of two each week; new PRs
    were never drawn ...; the run still said `done`. A PR that fails to build twice is reported
    (Inbox: Needs you, with why) and no longer carried; carried PRs never take more than half the
    sample; a run that graded less than it sampled says so." """
    (assay_home / "config.toml").write_text('[scoring]\nowners = ["acme"]\nsize = 2\n'
                                            'seats = ["fake-scorer:claude-sonnet-9", "fake-scorer:gpt-9"]\n')
    data = world["data"]
    broken = [pull("acme/app", n, "0" * 40, CLAUDE, issue=100 + n) for n in (1, 2)]  # a commit the repository lacks
    data["pulls"] = broken
    world["path"].write_text(json.dumps(data))

    first = score(assay_home, world, *RUN)
    shown = json.loads(first.stdout)
    assert first.returncode == 4 and shown["outcome"] == "incomplete" and shown["scored"] == []
    assert sorted(shown["not_graded"]) == ["acme/app#1", "acme/app#2"] and shown["dropped"] == {}
    row = needs_you(assay_home, world, shown["id"])
    assert row["outcome"] == "incomplete" and row["summary"].startswith("0 of 2 sampled scored; not graded, tried again")
    assert "acme/app#1 (its packet could not be built" in row["summary"]

    data["pulls"] = broken + [pull("acme/app", n, data["commits"][2], CODEX, issue=100 + n, days_ago=0) for n in (3, 4, 5)]
    world["path"].write_text(json.dumps(data))
    second = score(assay_home, world, *RUN)
    shown = json.loads(second.stdout)
    assert second.returncode == 4 and len(shown["sample"]) == 2 and len(shown["scored"]) == 1  # a new one was drawn
    [(gone, why)] = shown["dropped"].items()
    assert gone in ("acme/app#1", "acme/app#2") and why.startswith("not graded in 2 runs; last: its packet could not be built")
    assert f"dropped (not carried again): {gone} (not graded in 2 runs" in needs_you(assay_home, world, shown["id"])["summary"]

    data["pulls"].append(pull("acme/app", 6, data["commits"][2], CODEX, issue=106, days_ago=0))
    world["path"].write_text(json.dumps(data))
    third = json.loads(score(assay_home, world, *RUN).stdout)
    assert gone not in third["sample"] and len(third["dropped"]) == 1 and gone not in third["dropped"]
    assert all(len(r["carried"]) <= r["size"] // 2 for r in runs(assay_home)[1:])  # never more than half
    fourth = score(assay_home, world, *RUN)
    shown = json.loads(fourth.stdout)
    assert fourth.returncode == 0 and shown["outcome"] == "done" and not {"acme/app#1", "acme/app#2"} & set(shown["sample"])

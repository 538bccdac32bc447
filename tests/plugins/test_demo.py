"""`assay demo`, as the README's first command runs it: a whole Experiment, offline."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli


def test_demo_runs_end_to_end_and_its_results_are_listable(assay_home: Path):
    result = run_cli(assay_home, "demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "scripted Custom runners (not AI agents)" in out
    assert "assay-demo/pager-off-by-one" in out
    verdict_line = next(line for line in out.splitlines() if line.startswith("Verdict: "))
    assert verdict_line.startswith("Verdict: pass, interval [+")
    exp_id = next(line for line in out.splitlines() if line.startswith("Show again: ")).split()[-1]
    assert "Trials: 0 running, 48/48 done" in result.stderr

    listing = json.loads(run_cli(assay_home, "experiments", "--json").stdout)
    assert [(e["id"], e["verdict"]["verdict"]) for e in listing] == [(exp_id, "pass")]
    text = run_cli(assay_home, "experiments", exp_id).stdout
    assert "stopped_to_ask" in text and "Outcome." not in text, "outcomes print as their values"
    shown = json.loads(run_cli(assay_home, "experiments", exp_id, "--json").stdout)
    assert len(shown["trials"]) == 48
    assert shown["arms"]["candidate"]["runner"] == "demo-careful"
    assert {t["score"]["grader"] for t in shown["trials"] if t["score"]} <= {"code", "assay"}

    again = run_cli(assay_home, "demo", "--json")
    assert again.returncode == 0
    line = json.loads(again.stdout.strip().splitlines()[-1])
    assert line == {"id": exp_id, "outcome": "pass", "verdict": "pass", "interval": shown["verdict"]["interval"],
                    "final": True, "waiting": []}

"""`assay demo scoring`: a whole Scoring run offline, on the bundled repository and pull-request
history, served by the bundled fake gh and graded by the scripted Grader (issue 31: "give `assay
score` a bundled offline demo ..., as `assay demo` does for Experiments")."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli


def without_gh() -> str:
    """PATH without any folder that holds a real gh: the demo must need none."""
    return os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "gh").exists())


@pytest.mark.slow
def test_the_scoring_demo_runs_offline_and_leaves_your_scoring_runs_alone(assay_home: Path):
    """Issue 31 acceptance: "`assay score --demo` (or `assay demo scoring`) runs offline in under a
    minute on a fresh install" (the time is printed, and measured by benchmarks/bench_demo_scoring.py)."""
    done = run_cli(assay_home, "demo", "scoring", "--json", PATH=without_gh())
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["outcome"] == "done" and shown["summary"].startswith("7 of 7 sampled scored")
    pulls = {p["key"]: p for p in shown["week"]["pulls"]}
    assert "acme/pager-demo#15" not in pulls  # a Security fix: left out
    assert {k for k, p in pulls.items() if p["model"] is None} == {"acme/pager-demo#5", "acme/pager-demo#6"}  # yours first
    broken = pulls["acme/pager-demo#16"]
    assert broken["grader"] == "demo-grader:claude-demo" and not broken["model"]["Correct"]["passed"]  # the family rule
    assert pulls["acme/pager-demo#13"]["model"]["Honest"]["why"].startswith("the description says lint is clean")
    assert shown["bug_origins"] == ["acme/pager-demo#20"]
    demo = Path(shown["home"])
    assert demo == assay_home / "demos" / "scoring" and not (assay_home / "evals" / "scoring").exists()
    bug = json.loads(run_cli(assay_home, "bug-origins", "acme/pager-demo#20", "--json", ASSAY_HOME=str(demo)).stdout)
    assert bug["proposed"]["pull"] == "acme/pager-demo#16" and "codex" in bug["proposed"]["built_with"]
    packet = next(demo.glob("evals/scoring/pulls/*16/packet/packet.md")).read_text()
    assert "Claude" not in packet and "Built with" not in packet and "[redacted]" in packet
    again = run_cli(assay_home, "demo", "scoring", PATH=without_gh())
    assert again.returncode == 0 and "7 of 7 sampled scored" in again.stdout and "Done in" in again.stdout
    assert "assay scores acme/pager-demo#5 --mine" in again.stdout


def test_the_fake_gh_the_demo_ships_answers_what_the_docs_list(tmp_path: Path):
    """The bundled fake gh is the one the Scoring run's tests use too: a world it serves, and a call it
    doesn't know is a 404, as GitHub's would be."""
    from assay.plugins.demo.scoring import gh_on_path

    world = tmp_path / "world.json"
    world.write_text(json.dumps({"repos": {"acme/app": {"clone_url": "/nowhere"}}}))
    gh = gh_on_path(tmp_path / "bin", world) / "gh"
    assert os.access(gh, os.X_OK)
    known = subprocess.run([str(gh), "api", "-X", "GET", "repos/acme/app"], capture_output=True, text=True)
    assert known.returncode == 0 and json.loads(known.stdout) == {"clone_url": "/nowhere"}
    unknown = subprocess.run([str(gh), "api", "-X", "GET", "repos/acme/other"], capture_output=True, text=True)
    assert unknown.returncode == 1 and "Not Found (HTTP 404)" in unknown.stderr

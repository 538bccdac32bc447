"""Issue 37, acceptance: a new user's first hour, walked from the docs alone — an Eval suite
(docs/eval-tasks.md), two Custom-runner Arms (docs/custom-runners.md), an Experiment
(docs/experiments.md), a changed margin started afresh by the command the refusal names, and a
broken runner reported as broken. Every file below is written as those pages describe it, and
every next step is read from what assay printed, never from knowing its insides."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[2]
GIT = ["git", "-c", "user.name=me", "-c", "user.email=me@example.com"]

# docs/custom-runners.md: request.json gives the repository and the branch; result.json says how it ended.
AGENT = '''import json, os, pathlib, subprocess
request = json.loads(pathlib.Path(os.environ["ASSAY_REQUEST"]).read_text())
repo = pathlib.Path(request["repository"])
if os.environ.get("AGENT_MODE", "{mode}") == "fix":
    (repo / "calc.py").write_text("def add(a, b):\\n    return a + b\\n")
    subprocess.run(["git", "-c", "user.name=agent", "-c", "user.email=a@b", "commit", "-qam", "fix add"], cwd=repo, check=True)
pathlib.Path(request["output_dir"], "result.json").write_text(json.dumps({{"version": 1, "outcome": "delivered"}}))
'''


def sh(*argv: str, cwd: Path) -> str:
    return subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def a_suite(home: Path, tasks: int) -> None:
    """docs/eval-tasks.md: ASSAY_HOME/evals/suites/<suite>/suite.toml and one folder per task."""
    suite = home / "evals" / "suites" / "calc"
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text('kind = "process"\ndescription = "add() bugs"\n')
    for i in range(1, tasks + 1):
        task = suite / f"add-{i}"
        repo = task / "repo"
        repo.mkdir(parents=True)
        sh("git", "init", "-q", "-b", "main", cwd=repo)
        (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        (repo / "test_calc.py").write_text("import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n"
                                           f"    def test_add(self):\n        self.assertEqual(add({i}, 2), {i + 2})\n")
        sh(*GIT, "add", ".", cwd=repo)
        sh(*GIT, "commit", "-qm", "the bug", cwd=repo)
        (task / "issue.md").write_text("add() subtracts; make it add.\n")
        (task / "task.toml").write_text(f'repository = "repo"\nbase = "{sh("git", "rev-parse", "HEAD", cwd=repo)}"\n'
                                        '[inputs]\nissue = "issue.md"\n'
                                        '[criteria]\ntest_command = ["python3", "-m", "unittest", "-q"]\n')


def a_runner(folder: Path, name: str, mode: str, script: str = "agent.py") -> Path:
    """docs/custom-runners.md, "The manifest": a command, and [files] frozen into {runner_dir}."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.py").write_text(AGENT.format(mode=mode))
    manifest = folder / f"{name}.toml"
    manifest.write_text(f'command = ["python3", "{{runner_dir}}/{script}"]\n[files]\n"agent.py" = "runner_dir"\n')
    return manifest


@pytest.mark.slow
def test_the_first_hour_from_the_docs(assay_home: Path, tmp_path: Path) -> None:
    docs = {name: (REPO / "docs" / f"{name}.md").read_text() for name in ("experiments", "custom-runners", "eval-tasks")}
    assert "--label" in docs["experiments"] and "Final or not" in docs["experiments"]
    assert '"src/agent.py" = "runner_dir"' in docs["custom-runners"]

    def assay(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(assay_home, *args, cwd=tmp_path)

    a_suite(assay_home, tasks=3)
    checked = assay("suites", "check")
    assert checked.returncode == 0 and checked.stdout.strip() == "1 suite(s), 3 task(s), 0 problem(s).", checked.stdout
    plain = a_runner(tmp_path / "plain", "plain", "nothing")
    fixer = a_runner(tmp_path / "fixer", "fixer", "fix")
    start = ("experiment", "--suite", "calc", "--baseline-runner", str(plain), "--candidate-runner", str(fixer),
             "--trials-per-task", "1", "--sandbox", "none")

    first = assay(*start)
    assert first.returncode in (0, 5), first.stdout + first.stderr  # docs/experiments.md, exit codes
    assert "Expected spend" in first.stdout and re.search(r"^Verdict: |^Provisional Verdict", first.stdout, re.M)
    shown_again = re.search(r"Show again: (assay experiments \S+)", first.stdout)[1]
    shown = assay(*shlex.split(shown_again)[1:], "--json")
    data = json.loads(shown.stdout)
    assert [t["candidate"] for t in data["tasks"]] == [1, 1, 1] and [t["baseline"] for t in data["tasks"]] == [0, 0, 0]
    assert data["verdict"]["final"] in (True, False) and isinstance(data["verdict"]["waiting"], list)

    # a changed margin: refused for the Experiment that ran, with the command that starts afresh
    refused = assay(*start, "--margin", "0.2")
    assert refused.returncode == 2 and "can't change (margin: recorded 0.1, now 0.2)" in refused.stderr
    fresh = assay(*shlex.split(refused.stderr.split("run: ", 1)[1].strip())[1:])
    assert fresh.returncode in (0, 5), fresh.stderr
    listed = json.loads(assay("experiments", "--json").stdout)
    assert [r["label"] for r in listed] == ["2", None] and listed[0]["id"] != listed[1]["id"]
    assert json.loads(assay("experiments", listed[0]["id"], "--json").stdout)["bar"]["margin"] == 0.2

    # a broken runner: a wrong script path is refused before any Trial, naming the file
    typo = a_runner(tmp_path / "typo", "typo", "fix", script="agnet.py")
    broken = assay("experiment", "--suite", "calc", "--baseline-runner", str(plain), "--candidate-runner", str(typo),
                   "--trials-per-task", "1", "--sandbox", "none")
    assert broken.returncode == 2 and broken.stderr.count("\n") == 1, broken.stderr
    assert "agnet.py: no such file in the sandbox" in broken.stderr
    # one that starts but fails every Trial the same way is reported as broken, first, and needs you
    crashing = tmp_path / "crashing"
    crashing.mkdir()
    (crashing / "agent.py").write_text("import sys\nsys.exit('no model configured')\n")
    manifest = crashing / "crashing.toml"
    manifest.write_text('command = ["python3", "{runner_dir}/agent.py"]\n[files]\n"agent.py" = "runner_dir"\n')
    failing = assay("experiment", "--suite", "calc", "--baseline-runner", str(plain), "--candidate-runner",
                    str(manifest), "--trials-per-task", "1", "--sandbox", "none")
    assert failing.returncode in (0, 5), failing.stderr
    said = failing.stdout[failing.stdout.index("Broken Arm:"):]
    assert said.startswith("Broken Arm: every Trial of the Candidate failed the same way")
    assert "no model configured" in said.splitlines()[0]
    inbox = json.loads(assay("inbox", "--json").stdout)
    assert any(r["broken_arms"] for r in inbox["needs_you"])

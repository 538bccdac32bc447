"""A Factory repository and a fixture suite for whole-CLI Experiment tests."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import built_once, cli_env, copy_home, run_cli

PLUGINS = "fake_agent_plugin"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def make_repo(repo: Path, *commits: dict[str, str]) -> list[str]:
    """A real repository on branch main with one commit per {path: text} dict; returns the commit ids."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    ids = []
    for i, files in enumerate(commits):
        for path, text in files.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
        git(repo, "add", ".")
        git(repo, "commit", "-qm", f"commit {i + 1}")
        ids.append(git(repo, "rev-parse", "HEAD"))
    return ids


def make_factory(root: Path) -> Path:
    """A Factory with a main branch and a `change` branch that edits a skill."""
    factory = root / "factory"
    (factory / "skills").mkdir(parents=True)
    git(factory, "init", "-q", "-b", "main")
    (factory / "assay.toml").write_text('[defaults]\nharness = "fake-agent"\nmodel = "good"\n')
    (factory / "skills" / "implement.md").write_text("Implement the issue.\n")
    git(factory, "add", ".")
    git(factory, "commit", "-qm", "factory")
    git(factory, "checkout", "-q", "-b", "change")
    (factory / "skills" / "implement.md").write_text("Implement the issue, carefully.\n")
    git(factory, "commit", "-qam", "change the skill")
    git(factory, "checkout", "-q", "main")
    return factory


def make_claude_factory(root: Path) -> Path:
    """A Factory of one commit on main whose defaults run Claude Code (Model opus)."""
    factory = root / "factory"
    factory.mkdir()
    git(factory, "init", "-q", "-b", "main")
    (factory / "assay.toml").write_text('[defaults]\nharness = "claude"\nmodel = "opus"\n')
    git(factory, "add", ".")
    git(factory, "commit", "-qm", "factory")
    return factory


def make_suite(home: Path, tasks: int = 4, name: str = "fixture") -> list[str]:
    suite = home / "evals" / "suites" / name
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text('kind = "fixture"\ndepends_on = ["skills/**"]\n')
    ids = []
    for i in range(1, tasks + 1):
        task = suite / f"t{i}"
        base, _later = make_repo(task / "repo", {"README": f"task {i}\n"}, {"answer.txt": "right\n"})
        (task / "issue.md").write_text(f"Write the answer for task {i}.\n")
        (task / "task.toml").write_text(f'repository = "repo"\nbase = "{base}"\n[inputs]\nissue = "issue.md"\n')
        ids.append(f"{name}/t{i}")
    return ids


def scenario(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


def start_experiment(home: Path, factory: Path, scenario_file: Path, *args: str, **env: str) -> subprocess.Popen:
    """The fixture Experiment as a process of its own (--json, output piped), for a test that stops,
    kills or watches it while it runs; ``env`` is added to its environment."""
    return subprocess.Popen(
        [sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory), "--suite", "fixture",
         "--sandbox", "none", "--json", *args],
        env=cli_env(home, PLUGINS, FAKE_SCENARIO=str(scenario_file), **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )


def experiment(home: Path, factory: Path, scenario_file: Path, *args: str, **kw):
    return run_cli(
        home, "experiment", "change", "--factory", str(factory), "--suite", "fixture",
        "--sandbox", "none", *args, plugins=PLUGINS, FAKE_SCENARIO=str(scenario_file), **kw,
    )


def finished_experiment_once(tmp_path_factory: pytest.TempPathFactory, tasks: int) -> Path:
    """A folder whose ``assay-home`` holds a finished Experiment of the fake Harness on ``tasks``
    tasks of the fixture suite, the Candidate (model bad) wrong on t1, and its id in ``id``: run
    once per test run for every test that reads one; each test reads a copy (:func:`finished_copy`)."""
    name = f"finished-{tasks}-tasks"

    def build(folder: Path) -> None:
        # The Experiment records its Factory's path, and extending it reads the Factory there: it
        # goes beside the folder, which is renamed once built.
        root = folder.parent / f"{name}-factory"
        shutil.rmtree(root, ignore_errors=True)  # a build cut short earlier
        factory = make_factory(root)
        home = folder / "assay-home"
        home.mkdir()
        make_suite(home, tasks=tasks)
        sc = scenario(folder / "s.json", {"good": {"*": "right"}, "bad": {"fixture/t1": "wrong", "*": "right"}})
        result = experiment(home, factory, sc, "--candidate-model", "bad", "--json")
        assert result.returncode == 0, result.stderr
        (folder / "id").write_text(json.loads(result.stdout.splitlines()[-1])["id"])

    return built_once(tmp_path_factory, name, build)


def finished_copy(once: Path, assay_home: Path) -> str:
    """The Experiment :func:`finished_experiment_once` ran, copied into a test's own ``assay_home``, which it
    may change: its id."""
    copy_home(once / "assay-home", assay_home)
    return (once / "id").read_text()


BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"


def make_process_suite(home: Path, tasks: int = 3, name: str = "proc", extra: str = "") -> list[str]:
    """A process suite: each task's repository has a bug its unittest catches; the answer is never in it."""
    suite = home / "evals" / "suites" / name
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text('kind = "process"\ndepends_on = ["skills/**"]\n')
    ids = []
    for i in range(1, tasks + 1):
        task = suite / f"p{i}"
        _calc, base = make_repo(task / "repo", {"calc.py": BUGGY}, {"test_calc.py": TEST})
        (task / "issue.md").write_text("add() subtracts; make it add.\n")
        (task / "task.toml").write_text(
            f'repository = "repo"\nbase = "{base}"\n[inputs]\nissue = "issue.md"\n'
            '[criteria]\ntest_command = ["python3", "-m", "unittest", "-q"]\n' + extra
        )
        ids.append(f"{name}/p{i}")
    return ids


RUNNER = Path(__file__).parent / "fakes" / "scripted_runner.py"


def make_runner(folder: Path, name: str, behaviour: dict, git_exclude: tuple[str, ...] = (),
                script: Path = RUNNER) -> Path:
    """A Custom runner manifest around ``script`` (scripted_runner.py: ``behaviour`` maps task id
    (or "*") to a mode; hostile_runner.py: see its docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "runner.py").write_text(script.read_text())
    (folder / "behaviour.json").write_text(json.dumps(behaviour))
    (folder / "skills").mkdir(exist_ok=True)
    (folder / "skills" / "fix.md").write_text("How to fix things.\n")
    manifest = folder / f"{name}.toml"
    manifest.write_text(
        'command = ["python3", "{runner_dir}/runner.py"]\n'
        f"git_exclude = {json.dumps(list(git_exclude))}\n"
        '[files]\n"runner.py" = "runner_dir"\n"behaviour.json" = "runner_dir"\n"skills" = "home:.agent/skills"\n'
    )
    return manifest


def runner_experiment(home: Path, cwd: Path, baseline: Path, candidate: Path, *, sandbox: str = "none",
                      suite: str = "proc", **extra: str) -> subprocess.CompletedProcess:
    """``assay experiment`` on ``suite`` between two Custom runners' manifests, one Trial per task,
    with ``--json`` (``extra``: environment variables)."""
    return run_cli(home, "experiment", "--suite", suite, "--baseline-runner", str(baseline), "--candidate-runner",
                   str(candidate), "--trials-per-task", "1", "--sandbox", sandbox, "--json", plugins=PLUGINS, cwd=cwd,
                   **extra)


def make_released_factory(root: Path) -> dict[str, str]:
    """A Factory with release tags: v1.0, then v1.1 (a skill change), a docs-only commit (tagged
    build-7, which the default pattern ignores), then HEAD, which changes the skill and moves the
    Model from "old" to "new". Returns each named commit's id."""
    factory = root / "factory"
    factory.mkdir(parents=True)
    git(factory, "init", "-q", "-b", "main")
    ids = {}
    steps = [
        ("v1.0", {"assay.toml": '[defaults]\nharness = "fake-agent"\nmodel = "old"\n', "skills/implement.md": "one\n"}),
        ("v1.1", {"skills/implement.md": "two\n"}),
        ("docs", {"README.md": "docs only\n"}),
        ("head", {"skills/implement.md": "three\n", "assay.toml": '[defaults]\nharness = "fake-agent"\nmodel = "new"\n'}),
    ]
    for name, changed in steps:
        for path, text in changed.items():
            (factory / path).parent.mkdir(parents=True, exist_ok=True)
            (factory / path).write_text(text)
        git(factory, "add", ".")
        git(factory, "commit", "-qm", name)
        ids[name] = git(factory, "rev-parse", "HEAD")
    git(factory, "tag", "v1.0", ids["v1.0"])
    git(factory, "tag", "-a", "-m", "release 1.1", "v1.1", ids["v1.1"])
    git(factory, "tag", "build-7", ids["docs"])
    return ids

"""The bundled demo's content: the assay-demo suite and the two scripted demo runners.

Each runner is run here the way the Custom-runner machinery runs it (frozen bundle, request.json,
git_exclude in .git/info/exclude, fresh HOME, the repository as working directory), and graded
the way the code Grader grades: the task's test command on a fresh clone of the committed HEAD.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from assay.plugins import demo
from assay.plugins.demo import suite as demo_suite
from assay.storage.home import AssayHome

TASKS = demo_suite.task_names()
SHORTCUT_TASKS = sorted(p.name for p in (demo.RUNNERS / "shortcuts").iterdir())
HASTY_ATTEMPTS = 3


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def passes(task_folder: Path, repo: Path, scratch: Path) -> bool:
    """The code Grader's rule: the test command, on a fresh clone of the committed HEAD, exits 0."""
    command = tomllib.loads((task_folder / "task.toml").read_text())["criteria"]["test_command"]
    clone = scratch / "graded"
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", "--no-local", str(repo), str(clone)], check=True, capture_output=True)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(command, cwd=clone, env=env, capture_output=True, timeout=60)
    return done.returncode == 0


def freeze(manifest: Path, dest: Path) -> dict:
    """Copy the manifest's runner_dir files into a bundle, as the machinery freezes them."""
    data = tomllib.loads(manifest.read_text())
    for source, target in data["files"].items():
        assert target == "runner_dir", f"{manifest}: the demo runners bundle everything into runner_dir"
        assert "/" not in source.rstrip("/"), "sources sit beside the manifest, so the bundle path is unambiguous"
        src = manifest.parent / source
        if src.is_dir():
            shutil.copytree(src, dest / source)
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / source)
    return data


def tree_state(root: Path, skip: tuple[Path, ...]) -> dict[str, str]:
    """Every path under ``root`` (outside ``skip``) with a digest of its content and mtime."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d not in skip]
        state[str(here)] = "dir"
        for name in filenames:
            path = here / name
            state[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() + f":{path.stat().st_mtime_ns}"
    return state


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = AssayHome(tmp_path_factory.mktemp("assay-home"))
    assert demo_suite.install_demo_suite(home) == "assay-demo"
    return home.suites / "assay-demo"


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict]]:
    root = tmp_path_factory.mktemp("frozen")
    runners = {r.name: r for r in demo.assay_runners()}
    return {name: (root / name, freeze(r.manifest, root / name)) for name, r in runners.items()}


RunAgent = Callable[..., tuple[dict, Path, Path]]


@pytest.fixture
def run_agent(installed: Path, frozen: dict[str, tuple[Path, dict]]) -> RunAgent:
    """Run one demo runner on one task in ``trials/`` under ``root``; returns (result, repo, attempt)."""

    def run(runner: str, task: str, attempt: Path, task_id: str | None = None) -> tuple[dict, Path, Path]:
        bundle, manifest = frozen[runner]
        repo, output, home = attempt / "repo", attempt / "output", attempt / "home"
        shutil.copytree(installed / task / "repo", repo, symlinks=True)
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "exclude").write_text("\n".join(manifest["git_exclude"]) + "\n")
        shutil.copyfile(installed / task / "issue.md", attempt / "issue.md")
        output.mkdir()
        home.mkdir()
        request = attempt / "request.json"
        request.write_text(json.dumps({
            "version": 1, "repository": str(repo), "issue_file": str(attempt / "issue.md"),
            "base": git(repo, "rev-parse", "HEAD"), "branch": git(repo, "rev-parse", "--abbrev-ref", "HEAD"),
            "runner_dir": str(bundle), "output_dir": str(output), "home": str(home), "task": task_id or f"assay-demo/{task}",
        }))
        argv = [a.replace("{runner_dir}", str(bundle)).replace("{request}", str(request)) for a in manifest["command"]]
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "ASSAY_REQUEST": str(request)}
        watched = (attempt.parents[3], bundle, installed / task)
        before = [tree_state(root, (repo, output)) for root in watched]
        done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "scripted assay demo runner, not an AI agent" in done.stdout.splitlines()[0]
        assert [tree_state(root, (repo, output)) for root in watched] == before, "touched files outside repo/output"
        return json.loads((output / "result.json").read_text()), repo, attempt

    return run


def attempt_folder(root: Path, task: str, arm: str, index: int) -> Path:
    """The machinery's layout: trials/<suite>__<task>/<arm>-<index>/attempt-<n>/ (attempts count from 0)."""
    folder = root / "trials" / f"assay-demo__{task}" / f"{arm}-{index}" / "attempt-0"
    folder.mkdir(parents=True)
    return folder


def test_suite_has_at_least_eight_tasks_and_passes_suites_check(installed: Path, cli) -> None:
    assert len(TASKS) >= 8
    suite = tomllib.loads((installed / "suite.toml").read_text())
    assert suite["kind"] == "process" and "demo" in suite["description"]
    home = installed.parent.parent.parent
    result = cli("suites", "check", ASSAY_HOME=str(home))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(TASKS)} task(s), 0 problem(s)" in result.stdout


def test_demo_runners_are_registered_through_the_plugin_hook(cli) -> None:
    result = cli("plugins", "--json")
    assert result.returncode == 0, result.stderr
    assert "demo-careful" in result.stdout and "demo-hasty" in result.stdout


@pytest.mark.parametrize("task", TASKS)
def test_task_history_ends_at_base_where_the_tests_fail(installed: Path, task: str, tmp_path: Path) -> None:
    folder = installed / task
    manifest = tomllib.loads((folder / "task.toml").read_text())
    repo = folder / manifest["repository"]
    assert manifest["inputs"] == {"issue": "issue.md"} and (folder / "issue.md").read_text().startswith("# ")
    assert git(repo, "rev-parse", "HEAD") == manifest["base"]
    assert git(repo, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    assert len(git(repo, "rev-list", "--all").split()) >= 2
    assert git(repo, "status", "--porcelain") == ""
    assert not passes(folder, repo, tmp_path)


@pytest.mark.slow
def test_install_is_idempotent_and_reproducible(installed: Path, tmp_path: Path) -> None:
    bases = {t: tomllib.loads((installed / t / "task.toml").read_text())["base"] for t in TASKS}
    home = AssayHome(tmp_path)
    demo_suite.install_demo_suite(home)
    folder = home.suites / "assay-demo"
    mark = folder / "pager-off-by-one" / "task.toml"
    stamp = mark.stat().st_mtime_ns
    demo_suite.install_demo_suite(home)
    assert mark.stat().st_mtime_ns == stamp, "a matching install is left alone"
    # Same fixed authors and dates: the same base commits on every machine.
    assert {t: tomllib.loads((folder / t / "task.toml").read_text())["base"] for t in TASKS} == bases
    # An outdated install (different digest) is rebuilt.
    (folder / demo_suite.DIGEST_FILE).write_text("outdated\n")
    (folder / "pager-off-by-one" / "issue.md").write_text("stale")
    demo_suite.install_demo_suite(home)
    assert (folder / "pager-off-by-one" / "issue.md").read_text().startswith("# ")
    assert not [p for p in home.evals.iterdir() if p.name.startswith(".")], "no build leftovers"
    assert sorted(p.name for p in home.suites.iterdir()) == ["assay-demo"]


@pytest.mark.parametrize("task", TASKS)
def test_careful_runner_fixes_and_commits(task: str, run_agent: RunAgent, installed: Path, tmp_path: Path) -> None:
    result, repo, _ = run_agent("demo-careful", task, attempt_folder(tmp_path, task, "candidate", 0))
    assert result["version"] == 1 and result["outcome"] == "delivered", result
    assert git(repo, "rev-list", "--count", "HEAD") == str(int(git(installed / task / "repo", "rev-list", "--count", "HEAD")) + 1)
    assert git(repo, "status", "--porcelain") == "", "the scratch notes stay out of git"
    assert ".demo-careful/notes.md" not in git(repo, "show", "--name-only", "--format=", "HEAD")
    assert passes(installed / task, repo, tmp_path)


def test_every_task_has_a_bundled_solution() -> None:
    assert sorted(p.name for p in (demo.RUNNERS / "solutions").iterdir()) == TASKS
    assert set(SHORTCUT_TASKS) <= set(TASKS)


@pytest.mark.parametrize("task", SHORTCUT_TASKS)
def test_hasty_shortcuts_are_real_but_incomplete_fixes(task: str, installed: Path, tmp_path: Path) -> None:
    """A shortcut must change something and still fail: the hasty runner's quick fixes are honest misses."""
    shortcut = demo.RUNNERS / "shortcuts" / task
    repo = tmp_path / "repo"
    shutil.copytree(installed / task / "repo", repo)
    for path in shortcut.rglob("*.py"):
        target = repo / path.relative_to(shortcut)
        assert target.read_text() != path.read_text()
        shutil.copyfile(path, target)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "shortcut"], cwd=repo, check=True)
    assert not passes(installed / task, repo, tmp_path)


@pytest.mark.slow
def test_hasty_runner_is_clearly_worse_over_the_suite(run_agent: RunAgent, installed: Path, tmp_path: Path) -> None:
    outcomes: dict[str, list[tuple[str, bool]]] = {}
    for task in TASKS:
        for index in range(HASTY_ATTEMPTS):
            result, repo, attempt = run_agent("demo-hasty", task, attempt_folder(tmp_path, task, "baseline", index))
            assert result["version"] == 1 and result["outcome"] in {"delivered", "stopped_to_ask", "failed"}
            assert ".demo-hasty.log" not in git(repo, "show", "--name-only", "--format=", "HEAD")
            outcomes.setdefault(task, []).append((result["outcome"], passes(installed / task, repo, attempt)))
    passed = sum(ok for runs in outcomes.values() for _, ok in runs)
    total = len(TASKS) * HASTY_ATTEMPTS
    # The careful runner passes every task (test above); the hasty one clearly less, but not never.
    assert 0 < passed <= total * 0.6, outcomes
    assert {o for runs in outcomes.values() for o, _ in runs} >= {"delivered", "stopped_to_ask", "failed"}, outcomes
    # Delivered without a pass: a quick fix or a forgotten commit, never a crash.
    assert any(o == "delivered" and not ok for runs in outcomes.values() for o, ok in runs), outcomes
    # Trials of one task differ: the hasty runner draws its habit per Trial.
    assert any(len({ok for _, ok in runs}) > 1 for runs in outcomes.values()), outcomes
    # Deterministic per Trial: the same Trial folder names draw the same habits.
    again, repo, attempt = run_agent("demo-hasty", TASKS[0], attempt_folder(tmp_path / "again", TASKS[0], "baseline", 0))
    assert again["outcome"] == outcomes[TASKS[0]][0][0]


def test_runners_refuse_tasks_they_do_not_know(run_agent: RunAgent, installed: Path, tmp_path: Path) -> None:
    """Scripted runners don't pretend: on a task outside the demo they fail and say why."""
    for runner in ("demo-careful", "demo-hasty"):
        attempt = attempt_folder(tmp_path, TASKS[0], runner, 0)
        result, repo, _ = run_agent(runner, TASKS[0], attempt, task_id="my-suite/not-a-demo-task")
        assert result["outcome"] == "failed" and "only know the bundled assay-demo tasks" in result["summary"]
        assert git(repo, "status", "--porcelain") == ""


@pytest.mark.slow
def test_wheel_carries_every_demo_file(assay_wheel: Path) -> None:
    """The demo's task snapshots and runner bundles are package data: a wheel must hold them all."""
    import zipfile

    plugin = Path(demo.__file__).parent
    names = set(zipfile.ZipFile(assay_wheel).namelist())
    expected = {
        f"assay/plugins/demo/{p.relative_to(plugin).as_posix()}"
        for p in plugin.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    }
    assert expected - names == set()

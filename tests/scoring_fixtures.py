"""A world for the Scoring run's tests: a repository, merged pull requests with Built-with lines,
issues with edit histories, bug issues and their fixes, served by a fake ``gh`` on PATH."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.plugins.demo.scoring import gh_on_path

from tests.conftest import built_once, cli_env, copy_home, run_cli
from tests.experiment_fixtures import PLUGINS, git

CLAUDE = "Built with claude 2.1.197 · claude-opus-5 · high"
CODEX = "Built with codex · gpt-5.5 · medium"  # an older line, without the Harness version
SEATS = '["fake-scorer:claude-sonnet-9", "fake-scorer:gpt-9"]'


def stamp(days_ago: float) -> str:
    return (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pull(repo: str, number: int, commit: str, built_with: str | None, *, issue: int | None = None,
         days_ago: float = 1, labels: tuple[str, ...] = (), title: str = "Fix the pager") -> dict:
    body = f"Fixes #{issue}\n\nAll tests pass.\n\n🤖 Generated with [Claude Code](https://claude.com/claude-code)\n"
    body = f"{body}\n{built_with}\n" if built_with else body
    return {"repo": repo, "number": number, "title": title, "body": body, "created_at": stamp(days_ago + 1),
            "merged_at": stamp(days_ago), "merge_commit_sha": commit, "labels": list(labels),
            "closes": [issue] if issue else [],
            "commits": [stamp(days_ago + 0.5)], "checks": [["tests", "success"], ["lint", "failure"]]}


# The repository's history, as a Factory writes it: agents' commits carry their attribution lines.
ATTRIBUTION = "\n\n🤖 Generated with [Claude Code](https://claude.com/claude-code)\n\nCo-Authored-By: Claude <noreply@anthropic.com>"
HISTORY = [
    ({"pager.py": "def pages(n, size):\n    return 1\n"}, "Start the pager" + ATTRIBUTION, ("Claude", "noreply@anthropic.com")),
    ({"pager.py": "def pages(n, size):\n    return n // size\n"},  # PR #20 lets a bug in
     f"Count pages\n\n{CLAUDE}\nCo-Authored-By : Codex <codex@openai.com>", ("dev", "dev@acme.test")),
    ({"pager.py": "def pages(n, size):\n    return -(-n // size)  # FIXED: pages round up\n",  # which this fixes
      "test_pager.py": f"def test_pages():\n    assert pages(10, 3) == 4  # {CLAUDE}\n"},
     "Round pages up" + ATTRIBUTION + "\nAssisted-by: GPT-5.5 (OpenAI)", ("Claude Opus 4.5", "claude@anthropic.com")),
]


def make_history(repo: Path, history: list = HISTORY) -> list[str]:
    """A real repository on main with one commit per (files, message, (author, email)); the commit ids."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    ids = []
    for files, message, (name, email) in history:
        for path, text in files.items():
            (repo / path).write_text(text)
        git(repo, "add", ".")
        subprocess.run(["git", "-c", f"user.name={name}", "-c", f"user.email={email}", "-C", str(repo), "commit", "-qm",
                        message], check=True)
        ids.append(git(repo, "rev-parse", "HEAD"))
    return ids


@pytest.fixture
def world(tmp_path: Path, assay_home: Path) -> dict:
    """acme/app with six merged factory PRs (three per setup), a security fix, one with no Built-with
    line and one merged before the window; and a gh that serves them."""
    return make_world(tmp_path, assay_home)


def make_world(root: Path, assay_home: Path) -> dict:
    """The :func:`world` in ``root``, its seats in ``assay_home``."""
    repo = root / "acme-app"
    commits = make_history(repo)
    pulls = [pull("acme/app", n, commits[2], CLAUDE if n % 2 else CODEX, issue=100 + n) for n in range(1, 7)]
    pulls += [pull("acme/app", 7, "7" * 40, CLAUDE, issue=107),  # its issue is a security fix
              pull("acme/app", 8, commits[2], None, issue=108),  # not built by the Factory
              pull("acme/app", 9, commits[2], CLAUDE, issue=109, days_ago=30),  # before the first window
              pull("acme/app", 20, commits[1], CLAUDE, issue=119, days_ago=400)]  # long ago: the bug's origin
    # each issue as opened, edited after work began and before the merge (the text the packet holds), then after
    issues = [{"repo": "acme/app", "number": 100 + n, "title": "now", "body": "now", "labels": ["bug"],
               "edits": [[stamp(40), f"As opened ({n})."],
                         [stamp(days + 0.2), f"The pager drops the last page ({n}).\n{CLAUDE}"],
                         [stamp(days - 0.9), "EDITED LATER"]],
               "renames": [[stamp(days + 0.2), f"Pager {n}", f"Pager bug {n}"],
                           [stamp(days - 0.9), f"Pager bug {n}", "RENAMED LATER"]]}
              for n, days in ((n, 30 if n == 9 else 1) for n in range(1, 10))]
    issues[6]["labels"] = ["security-fix"]
    issues += [{"repo": "acme/app", "number": 120, "title": "The last page is lost", "body": "10 items, 3 a page: 3 pages",
                "labels": ["bug"], "closed_at": stamp(1), "fixed_by": commits[2]},
               {"repo": "acme/app", "number": 121, "title": "A security hole", "body": "secret", "closed_at": stamp(1),
                "labels": ["bug", "security-fix"], "fixed_by": commits[2]},  # never traced
               {"repo": "acme/app", "number": 122, "title": "An old bug", "body": "long ago", "labels": ["bug"],
                "closed_at": stamp(100)}]  # closed before any window, with no fix commit: the first run finds it
    data = {"logged_in": True, "repos": {"acme/app": {"clone_url": str(repo)}}, "pulls": pulls, "issues": issues,
            "commit_diffs": {commits[2]: git(repo, "diff", commits[1], commits[2])}, "commits": commits}
    (root / "world.json").write_text(json.dumps(data))
    bin_dir = gh_on_path(root / "bin", root / "world.json", root / "gh.log")  # the fake gh assay ships
    seats(assay_home)
    return {"path": root / "world.json", "bin": bin_dir, "data": data, "log": root / "gh.log"}


@pytest.fixture(scope="session")
def scored_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose ``assay-home`` has had one Scoring run (RUN, the default seats) of the world,
    its output kept in ``run.json``: made once per test run for the tests that start from one
    (about 3 s of CPU each time); read it through :func:`scored`."""
    def build(folder: Path) -> None:
        shutil.rmtree(_scored_world(folder), ignore_errors=True)  # a build cut short earlier
        home = folder / "assay-home"
        home.mkdir()
        done = score(home, make_world(_scored_world(folder), home), *RUN)
        (folder / "run.json").write_text(json.dumps([done.returncode, done.stdout, done.stderr]))

    return built_once(tmp_path_factory, "scored", build)


def _scored_world(folder: Path) -> Path:
    """Where :func:`scored_once` keeps its world: beside its folder, which is renamed once built,
    as the run's records and the world's own files name the world's paths."""
    return folder.parent / "scored-world"


@pytest.fixture
def scored(scored_once: Path, assay_home: Path) -> tuple[dict, subprocess.CompletedProcess[str]]:
    """The world after one Scoring run (RUN) in this test's own ``ASSAY_HOME`` (a copy of the one
    made once, which a test may change), and that run as its process ended. The world is shared:
    read it, and run more commands against it, but don't change its files."""
    copy_home(scored_once / "assay-home", assay_home)
    code, out, err = json.loads((scored_once / "run.json").read_text())
    world_dir = _scored_world(scored_once)
    world = {"path": world_dir / "world.json", "bin": world_dir / "bin",
             "data": json.loads((world_dir / "world.json").read_text()), "log": world_dir / "gh.log"}
    return world, subprocess.CompletedProcess(list(RUN), code, out, err)


def score(assay_home: Path, world: dict, *args: str, **env: str):
    return run_cli(assay_home, *args, plugins=PLUGINS, PATH=f"{world['bin']}{os.pathsep}{os.environ['PATH']}", **env)


RUN = ("score", "--sandbox", "none", "--unsandboxed-grader", "--seed", "7", "--json")


def seats(assay_home: Path, *seated: str) -> None:
    """The User config's [scoring] with these seats (default: one from each family)."""
    chosen = json.dumps(list(seated)) if seated else SEATS
    (assay_home / "config.toml").write_text(f'[scoring]\nowners = ["acme"]\nsize = 4\nseats = {chosen}\n')


def score_in_background(assay_home: Path, world: dict, **popen) -> subprocess.Popen:
    """`assay score` (RUN) as a process of its own, for a test that kills or stops it."""
    env = cli_env(assay_home, PLUGINS, PATH=f"{world['bin']}{os.pathsep}{os.environ['PATH']}")
    return subprocess.Popen([sys.executable, "-m", "assay", *RUN], env=env, **popen)


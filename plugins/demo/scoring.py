"""``assay demo scoring``: a whole Scoring run offline, to see one before pointing it at GitHub.

It builds, in a folder of its own (``ASSAY_HOME/demos/scoring``, made afresh each time, so the
demo never touches your own Scoring runs), the bundled repository ``acme/pager-demo`` and its
pull-request history: factory pull requests from two setups merged over the past week (one a
Security fix, left out), two older ones for you to score, and a bug closed yesterday. The bundled
fake ``gh`` serves that history (the same calls the real one answers, docs/scoring.md), and the
Grader is a scripted one that replays the answers bundled for each pull request: clearly not a
model, and each Score says why. Everything else is the real Scoring run: the window, the seeded
spread sample, the blind packets in the sandbox, the family rule, the Scores, a Bug origin.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from assay.hooks.protocols import Harness, HarnessBinary, Invocation, SandboxBackend, SessionOutcome, SessionRequest
from assay.scoring.github import GitHub
from assay.scoring.run import RunResult, ScoringRunner
from assay.storage import files
from assay.storage.home import AssayHome
from assay.storage.records import Outcome
from assay.storage.userconfig import scoring_config

BUNDLE = Path(__file__).parent / "scoring_bundle"
FAKE_GH = BUNDLE / "fake_gh.py"
GRADER = BUNDLE / "grader.py"
ANSWERS = BUNDLE / "answers.json"
HISTORY = BUNDLE / "history.json"
SEATS = ("demo-grader:claude-demo", "demo-grader:gpt-demo")  # a Claude-family seat and an OpenAI-family one
FIRST_COMMIT = dt.datetime(2026, 1, 5, 9, tzinfo=dt.timezone.utc)  # fixed dates: the same commits everywhere


class DemoGraderDecoder:
    """Reads the scripted Grader's one event: it answered, or it had no answer."""

    def __init__(self) -> None:
        self.answered = False

    def feed(self, line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        self.answered = self.answered or (isinstance(event, dict) and event.get("type") == "result")

    def finish(self, process) -> SessionOutcome:
        if process.timed_out:
            return SessionOutcome(Outcome.TIMEOUT, diagnostic="timed out")
        if not self.answered or process.exit_code != 0:
            return SessionOutcome(Outcome.FAILED, diagnostic=f"exit {process.exit_code}")
        return SessionOutcome(Outcome.DELIVERED, turns=1)


class DemoGraderHarness:
    """The demo's Grader seats: ``grader.py`` under this Python, in the sandbox, with no network."""

    name = "demo-grader"
    provider_hosts: tuple[str, ...] = ()

    def locate(self) -> HarnessBinary:
        return HarnessBinary(os.path.realpath(sys.executable), "demo-grader 1.0")

    def login_present(self, assay_home: Path) -> bool:
        return True

    def invocation(self, request: SessionRequest) -> Invocation:
        return Invocation(argv=(request.binary.path, str(GRADER), request.model or "", str(ANSWERS)),
                          cwd=request.repository, env={"PATH": os.environ.get("PATH", ""), "HOME": str(request.home)},
                          read_only=(GRADER, ANSWERS), read_write=(request.repository, request.home))

    def decoder(self) -> DemoGraderDecoder:
        return DemoGraderDecoder()


def gh_on_path(folder: Path, world: Path, log: Path | None = None) -> Path:
    """A ``gh`` in ``folder`` that is the bundled fake serving ``world`` (each call appended to
    ``log``); the folder, to put first on PATH or to name as the GitHub binary's folder."""
    folder.mkdir(parents=True, exist_ok=True)
    env = f"FAKE_GH_WORLD={shlex.quote(str(world))} " + (f"FAKE_GH_LOG={shlex.quote(str(log))} " if log else "")
    gh = folder / "gh"
    # -I -S: the fake needs nothing but the standard library, and a Scoring run calls gh a few times
    # per pull request (the site's start-up was a third of each call)
    gh.write_text(f'#!/bin/sh\n{env}exec {shlex.quote(sys.executable)} -I -S {shlex.quote(str(FAKE_GH))} "$@"\n')
    gh.chmod(0o755)
    return folder


def _stamp(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def build_world(root: Path, now: dt.datetime) -> Path:
    """The bundled repository (under ``root``) and the GitHub world the fake ``gh`` serves, its
    merge dates counted back from ``now``; returns the world's file."""
    history = json.loads(HISTORY.read_text())
    source = root / "pager-demo"
    source.mkdir(parents=True)
    _git(source, "init", "-q", "-b", "main")
    commits: dict[int, str] = {}  # pull request (or bug fixed) -> commit
    for n, commit in enumerate(history["commits"]):
        for path, text in commit["files"].items():
            (source / path).write_text(text)
        name, _, email = commit["author"].partition(" <")
        when = _stamp(FIRST_COMMIT + dt.timedelta(days=n))
        _git(source, "add", "-A")
        _git(source, "commit", "-q", "-m", commit["message"], env={
            "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">"), "GIT_AUTHOR_DATE": when,
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email.rstrip(">"), "GIT_COMMITTER_DATE": when})
        key = commit.get("pull") or commit.get("fixes")
        if key:
            commits[key] = _git(source, "rev-parse", "HEAD")
    repo = history["repo"]
    pulls = [{"repo": repo, "number": int(number), "title": p["title"], "body": p["body"],
              "created_at": _stamp(now - dt.timedelta(days=p["days_ago"] + 1)),
              "merged_at": _stamp(now - dt.timedelta(days=p["days_ago"])), "merge_commit_sha": commits[int(number)],
              "labels": [], "closes": [p["issue"]], "commits": [_stamp(now - dt.timedelta(days=p["days_ago"] + 0.5))],
              "checks": p.get("checks", [["lint", "success"], ["tests", "success"]])}
             for number, p in history["pulls"].items()]
    issues = [{"repo": repo, "number": int(number), "title": i["title"], "body": i["body"], "labels": i["labels"],
               "edits": [[_stamp(now - dt.timedelta(days=40)), i["body"]]]} for number, i in history["issues"].items()]
    issues += [{"repo": repo, "number": int(number), "title": b["title"], "body": b["body"], "labels": ["bug"],
                "closed_at": _stamp(now - dt.timedelta(days=b["closed_days_ago"])), "fixed_by": commits[int(number)]}
               for number, b in history["bugs"].items()]
    fixes = [c for number, c in commits.items() if str(number) in history["bugs"]]
    world = {"logged_in": True, "repos": {repo: {"clone_url": str(source)}}, "pulls": pulls, "issues": issues,
             "commit_diffs": {c: _git(source, "show", "--format=", c) + "\n" for c in fixes}}
    path = root / "world.json"
    files.write_json(path, world)
    return path


def run_demo(home: AssayHome, backend: SandboxBackend, report: Callable[[str], None]) -> RunResult:
    """Build the demo's world in ``home`` (which must be empty or absent) and run one Scoring run on it."""
    files.private_folder(home.root)
    world = build_world(home.root / "world", dt.datetime.now(dt.timezone.utc))
    (home.root / "config.toml").write_text(
        f'[scoring]\nowners = ["acme"]\nsize = 5\nseats = {json.dumps(list(SEATS))}\n')
    github = GitHub(str(gh_on_path(home.root / "world" / "bin", world) / "gh"))
    harnesses: dict[str, Harness] = {DemoGraderHarness.name: DemoGraderHarness()}
    runner = ScoringRunner(home, scoring_config(home.root), github, harnesses, backend, timeout=120, report=report)
    result = runner.score(seed=978)
    assert result is not None  # a fresh home: no other Scoring run can hold its lock
    return result


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", **(env or {})})
    return done.stdout.strip()

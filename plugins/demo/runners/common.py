"""What both scripted demo runners share: reading the request, editing, testing, committing,
and writing the result.

The demo runners are scripts, not AI agents: they know the bundled ``assay-demo`` tasks and
carry their edits in their own bundle (``solutions/``, and for the hasty one ``shortcuts/``).
They exist so ``assay demo`` can run a real Experiment offline. Both touch only the repository
they are given and their ``output_dir``, as every Custom runner should (docs/custom-runners.md).

This file is copied into each runner's frozen bundle, beside the agent that imports it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REQUEST_VERSION = 1
RESULT_VERSION = 1
TEST_COMMAND = (sys.executable, "-m", "unittest", "-q")


@dataclass(frozen=True)
class Request:
    """The fields of a version-1 ``request.json`` the demo runners use."""

    repository: Path
    issue_file: Path
    branch: str
    runner_dir: Path
    output_dir: Path
    task: str

    @property
    def task_name(self) -> str:
        """The task's folder name: the Eval task id is ``suite/task``."""
        return self.task.rsplit("/", 1)[-1]

    def bundled(self, folder: str) -> Path | None:
        """This task's files under ``runner_dir/<folder>/``, if the bundle has any."""
        path = self.runner_dir / folder / self.task_name
        return path if path.is_dir() else None


def banner(name: str) -> None:
    print(f"[{name}] scripted assay demo runner, not an AI agent: it replays edits bundled "
          "for the assay-demo tasks.", flush=True)


def read_request() -> Request:
    """The request whose path is in ``ASSAY_REQUEST``; exits 2 with a message if it is unusable."""
    path = os.environ.get("ASSAY_REQUEST")
    if not path:
        _refuse("ASSAY_REQUEST is not set: this demo runner is started by assay (see docs/demo.md)")
    data = json.loads(Path(path).read_text())
    if data.get("version") != REQUEST_VERSION:
        _refuse(f"request.json version {data.get('version')!r} is not {REQUEST_VERSION}")
    return Request(
        repository=Path(data["repository"]), issue_file=Path(data["issue_file"]), branch=data["branch"],
        runner_dir=Path(data["runner_dir"]), output_dir=Path(data["output_dir"]), task=data["task"],
    )


def _refuse(message: str) -> None:
    print(message, file=sys.stderr)
    raise SystemExit(2)


def write_result(request: Request, outcome: str, summary: str) -> None:
    """Write ``output_dir/result.json`` atomically (temp file, then rename), and say so."""
    request.output_dir.mkdir(parents=True, exist_ok=True)
    final = request.output_dir / "result.json"
    tmp = final.with_name(".result.json.tmp")
    tmp.write_text(json.dumps({"version": RESULT_VERSION, "outcome": outcome, "summary": summary}, indent=2) + "\n")
    os.replace(tmp, final)
    print(f"outcome: {outcome} — {summary}", flush=True)


def issue_title(request: Request) -> str:
    """The issue's first line, without its Markdown heading marks."""
    lines = request.issue_file.read_text(encoding="utf-8").strip().splitlines()
    return lines[0].lstrip("# ").strip() if lines else request.task_name


def note(request: Request, scratch: str, text: str) -> None:
    """Append a line to the runner's scratch file in the repository (kept out of git by its
    manifest's ``git_exclude``)."""
    path = request.repository / scratch
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(text + "\n")


def apply(files: Path, repository: Path) -> list[str]:
    """Copy every file under ``files`` over the repository; returns the paths written."""
    written = []
    for path in sorted(p for p in files.rglob("*") if p.is_file()):
        rel = path.relative_to(files)
        target = repository / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        written.append(rel.as_posix())
    return written


def run_tests(repository: Path) -> tuple[bool, str]:
    """Run the project's unittest suite; (passed, the last lines of its output)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(TEST_COMMAND, cwd=repository, env=env, capture_output=True, text=True, timeout=120)
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
    return done.returncode == 0, tail


def git(repository: Path, *args: str) -> str:
    """Run git in the repository, with an identity given on the command line because the
    Trial's fresh HOME has no git config."""
    done = subprocess.run(
        ["git", "-c", "user.name=assay demo runner", "-c", "user.email=demo-runner@assay.invalid",
         "-c", "commit.gpgsign=false", *args],
        cwd=repository, capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def commit(repository: Path, message: str, paths: list[str] | None = None) -> str:
    """Commit ``paths`` (or everything git does not ignore, when None); returns the new HEAD."""
    if paths is None:
        git(repository, "add", "-A")
    else:
        git(repository, "add", "--", *paths)
    git(repository, "commit", "-q", "--no-verify", "-m", message)
    return git(repository, "rev-parse", "--short", "HEAD")


def trial_rng(request: Request) -> random.Random:
    """Randomness fixed per Trial (task, Arm, index), so every attempt at a Trial behaves the same.

    Seeded from the task and the part of ``output_dir`` between its ``trials`` folder and the
    attempt (``trials/<suite>__<task>/<arm>-<n>``), which names the Trial but neither the
    Experiment nor the attempt: a Trial cut short by a kill and re-run as ``attempt-1`` draws what
    ``attempt-0`` drew, so the resumed Experiment reaches the uninterrupted Verdict. Where there is
    no ``trials`` folder, the whole path is used.
    """
    parts = request.output_dir.parts
    if "trials" in parts:
        parts = parts[len(parts) - 1 - parts[::-1].index("trials"):]
        parts = tuple(itertools.takewhile(lambda part: not re.fullmatch(r"attempt-\d+", part), parts))
    key = f"{request.task}\n{'/'.join(parts)}"
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))

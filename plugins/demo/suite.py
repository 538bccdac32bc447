"""Installs the bundled demo suite (``assay-demo``) into ``ASSAY_HOME``.

Each task is bundled as plain files: ``meta.toml`` (a description and the commits, oldest
first), ``issue.md``, and ``history/<commit folder>/`` snapshots laid over one another. The
builder turns each task into a real git repository whose last commit is the task's base, so the
demo exercises the same path a user's own process suite does (suite check, time-safe
preparation, grading on the committed HEAD). Authors and dates are fixed, so every machine
builds the same commits and the same base hashes.

The fixes are not here: they live only in the demo runners' bundles (``runners/``), so a
repository never holds anything later than its base.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

from assay.storage import files, owners
from assay.storage.home import AssayHome

SUITE_NAME = "assay-demo"
TASKS = Path(__file__).parent / "tasks"
TEST_COMMAND = ("python3", "-m", "unittest", "-q")
REPOSITORY = "repo"
DIGEST_FILE = ".demo-digest"
# Bump when the builder itself changes what it writes, so existing installs are rebuilt.
BUILD_FORMAT = 1
# Every commit is by this author, a day apart from this instant (2024-01-01T10:00:00Z).
AUTHOR = ("assay demo", "demo@assay.invalid")
EPOCH = 1_704_103_200
GITIGNORE = "__pycache__/\n*.pyc\n"


class DemoBuildError(RuntimeError):
    """The demo suite could not be built (for example, git is not installed)."""


def bundled_digest() -> str:
    """SHA-256 of the bundled task files and the builder format: what an install must match."""
    h = hashlib.sha256(f"format {BUILD_FORMAT}\n".encode())
    for path in sorted(p for p in TASKS.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(f"{path.relative_to(TASKS).as_posix()}\n".encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def install_demo_suite(home: AssayHome) -> str:
    """Write the demo suite to ``home.suites / "assay-demo"`` and return its name.

    Idempotent: an install whose digest matches the bundled content is left alone; a missing,
    partial or outdated one is rebuilt beside it and swapped in with one rename, so a kill
    at any point leaves either the old suite or the new one.
    """
    dest = home.suites / SUITE_NAME
    digest = bundled_digest()
    # Built outside evals/suites so a half-built folder is never mistaken for a suite; what a killed
    # install left goes first, even when the suite it was replacing is whole.
    for prefix in (f".{SUITE_NAME}.build-", f".{SUITE_NAME}.old-"):
        owners.sweep(home.evals, prefix, shutil.rmtree)
    if _installed_digest(dest) == digest:
        return SUITE_NAME
    home.suites.mkdir(parents=True, exist_ok=True)
    build = home.evals / f".{SUITE_NAME}.build-{owners.tag()}"
    shutil.rmtree(build, ignore_errors=True)
    try:
        _build_suite(build, digest)
        _swap_in(build, dest, digest)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return SUITE_NAME


def task_names() -> list[str]:
    """The bundled tasks, in the order the suite lists them."""
    return sorted(p.parent.name for p in TASKS.glob("*/meta.toml"))


def _installed_digest(dest: Path) -> str | None:
    try:
        return (dest / DIGEST_FILE).read_text().strip()
    except OSError:
        return None


def _swap_in(build: Path, dest: Path, digest: str) -> None:
    trash = dest.parent / f".{SUITE_NAME}.old-{owners.tag()}"
    if dest.exists():
        os.rename(dest, trash)
    try:
        os.rename(build, dest)
    except OSError:
        # Another process installed the same suite meanwhile: keep theirs if it matches.
        if _installed_digest(dest) != digest:
            raise
    finally:
        shutil.rmtree(trash, ignore_errors=True)


def _build_suite(folder: Path, digest: str) -> None:
    folder.mkdir(parents=True)
    (folder / "suite.toml").write_text(
        'kind = "process"\n'
        'description = "The bundled demo: small Python projects, each with a real bug and an issue; '
        'run by assay demo with two scripted demo runners (not AI agents)."\n'
    )
    for name in task_names():
        _build_task(TASKS / name, folder / name)
    # Written last: its presence marks a complete install.
    files.write_text(folder / DIGEST_FILE, digest + "\n")


def _build_task(source: Path, folder: Path) -> None:
    meta = tomllib.loads((source / "meta.toml").read_text())
    base = _build_repository(source, meta["commits"], folder / REPOSITORY)
    shutil.copyfile(source / "issue.md", folder / "issue.md")
    (folder / "task.toml").write_text(
        f"description = {_toml_str(meta['description'])}\n"
        f"repository = {_toml_str(REPOSITORY)}\n"
        f"base = {_toml_str(base)}\n"
        "\n[inputs]\n"
        'issue = "issue.md"\n'
        "\n[criteria]\n"
        f"test_command = [{', '.join(map(_toml_str, TEST_COMMAND))}]\n"
    )


def _build_repository(source: Path, commits: list[dict[str, str]], repo: Path) -> str:
    """A one-branch repository with one commit per snapshot folder; returns the last (the base)."""
    repo.mkdir(parents=True)
    _git(repo, "-c", "init.defaultBranch=main", "init", "-q", "--template=")
    (repo / ".gitignore").write_text(GITIGNORE)
    for day, commit in enumerate(commits):
        snapshot = source / "history" / commit["folder"]
        for path in sorted(p for p in snapshot.rglob("*") if p.is_file()):
            target = repo / path.relative_to(snapshot)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--no-verify", "-m", commit["message"], date=EPOCH + day * 86_400)
    return _git(repo, "rev-parse", "HEAD")


def _git(repo: Path, *args: str, date: int = EPOCH) -> str:
    """Run git with no user or system config, so signing, hooks or templates can't change a commit."""
    name, email = AUTHOR
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": f"{date} +0000",
        "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": f"{date} +0000",
    })
    try:
        done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
    except FileNotFoundError:
        raise DemoBuildError("the demo suite needs git on PATH to build its task repositories") from None
    if done.returncode != 0:
        raise DemoBuildError(f"git {' '.join(args)} failed in {repo}: {done.stderr.strip()}")
    return done.stdout.strip()


def _toml_str(value: str) -> str:
    """A TOML basic string (JSON's escapes are a subset of TOML's)."""
    return json.dumps(value)

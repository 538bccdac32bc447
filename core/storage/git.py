"""A thin, strict wrapper around the real ``git`` binary."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


class GitError(RuntimeError):
    """A git command failed; the message holds the command and git's own words."""


# Commits made by assay itself (never by a Trial's agent) carry this identity.
IDENTITY = {"GIT_AUTHOR_NAME": "assay", "GIT_AUTHOR_EMAIL": "assay@localhost",
            "GIT_COMMITTER_NAME": "assay", "GIT_COMMITTER_EMAIL": "assay@localhost"}


def git(*args: str, cwd: Path, env: Mapping[str, str] | None = None, input: bytes | None = None) -> str:
    """Run ``git ARGS`` in ``cwd`` and return stdout (stripped); raise :class:`GitError` on failure."""
    return git_bytes(*args, cwd=cwd, env=env, input=input).decode().strip()


def git_bytes(*args: str, cwd: Path, env: Mapping[str, str] | None = None, input: bytes | None = None) -> bytes:
    full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    # A process group of its own: a terminal's Ctrl-C is assay's to handle (a Stop), not the child's.
    proc = subprocess.run(["git", *args], cwd=cwd, env=full_env, input=input, capture_output=True,
                          process_group=0)
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {' '.join(args[:3])}: {message[-1] if message else f'exit {proc.returncode}'}")
    return proc.stdout


def is_repository(path: Path) -> bool:
    try:
        return git("rev-parse", "--is-inside-work-tree", cwd=path) == "true"
    except (GitError, FileNotFoundError, NotADirectoryError):
        return False


def resolve_commit(repo: Path, ref: str) -> str | None:
    """The full commit id ``ref`` names in ``repo``, or None if it names none."""
    try:
        return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo)
    except GitError:
        return None


def changed_paths(repo: Path, a: str, b: str) -> Sequence[str]:
    return [p for p in git("diff", "--name-only", a, b, cwd=repo).splitlines() if p]

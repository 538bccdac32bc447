"""A thin, strict wrapper around the real ``git`` binary."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path


class GitError(RuntimeError):
    """A git command failed; the message holds the command and git's own words."""


# Commits made by assay itself (never by a Trial's agent) carry this identity.
IDENTITY = {"GIT_AUTHOR_NAME": "assay", "GIT_AUTHOR_EMAIL": "assay@localhost",
            "GIT_COMMITTER_NAME": "assay", "GIT_COMMITTER_EMAIL": "assay@localhost"}


def git(*args: str, cwd: Path, env: Mapping[str, str] | None = None, input: bytes | None = None,
        inherit: bool = True) -> str:
    """Run ``git ARGS`` in ``cwd`` and return stdout (stripped); raise :class:`GitError` on failure.

    ``env`` is added to this process's environment, or with ``inherit=False`` is the whole of it.
    """
    return git_bytes(*args, cwd=cwd, env=env, input=input, inherit=inherit).decode().strip()


def git_bytes(*args: str, cwd: Path, env: Mapping[str, str] | None = None, input: bytes | None = None,
              inherit: bool = True, limit: int | None = None, cut: bool = False) -> bytes:
    """Run ``git ARGS`` and return its stdout; with ``limit``, output past that many bytes is a
    :class:`GitError` (git is killed), so a huge repository can't grow this process, or with
    ``cut`` the first ``limit`` bytes."""
    full_env = {**(os.environ if inherit else {}), "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    command = f"git {' '.join(args[:3])}"
    if limit is None:
        # A process group of its own: a terminal's Ctrl-C is assay's to handle (a Stop), not the child's.
        proc = subprocess.run(["git", *args], cwd=cwd, env=full_env, input=input, capture_output=True,
                              process_group=0)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    else:
        with tempfile.TemporaryFile() as stderr, subprocess.Popen(
            ["git", *args], cwd=cwd, env=full_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
            process_group=0,
        ) as running:
            assert running.stdout is not None and input is None
            out = running.stdout.read(limit + 1)
            if len(out) > limit:
                running.kill()
                running.wait()
                if cut:
                    return out[:limit]
                raise GitError(f"{command}: its output is over {limit} bytes")
            code = running.wait()
            stderr.seek(0)
            err = stderr.read(64 * 1024)
    if code != 0:
        message = err.decode(errors="replace").strip().splitlines()
        raise GitError(f"{command}: {message[-1] if message else f'exit {code}'}")
    return out


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

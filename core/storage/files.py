"""Crash-safe file writes, append-only logs and the one-process-per-Experiment lock.

A process killed at any instant leaves every file either old or new: each write goes to a
temporary file in the same folder, is fsynced, then renamed over the target.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def write_bytes(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` atomically (temp file, fsync, rename, fsync the folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def write_text(path: Path, text: str, *, mode: int = 0o644) -> None:
    write_bytes(path, text.encode(), mode=mode)


def write_json(path: Path, data: Any, *, mode: int = 0o644) -> None:
    write_bytes(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode(), mode=mode)


def append_line(path: Path, data: dict[str, Any]) -> None:
    """Append one JSON line with a single ``write`` on an O_APPEND descriptor.

    A kill mid-write can leave at most a torn last line, which :func:`read_lines` skips.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(data, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_lines(path: Path) -> list[dict[str, Any]]:
    """Every whole JSON line of an append-only log (a torn or garbled line is skipped)."""
    if not path.exists():
        return []
    out = []
    for raw in path.read_bytes().splitlines():
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def private_folder(path: Path) -> None:
    """Make ``path`` (and any missing parent) a folder only its owner can enter (0700).

    A Trial's files live in its Experiment's folder while it runs, and may be whatever the agent
    made (a set-uid binary, until the sandbox clears it): nobody else may reach them.
    """
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)


def remove_tree(path: Path) -> None:
    """Remove a folder, read-only parts included (a Trial may leave some); a missing one is fine."""
    if not path.exists() and not path.is_symlink():
        return
    for root, _dirs, _files in os.walk(path):
        os.chmod(root, 0o700)
    shutil.rmtree(path)


def empty_folder(path: Path) -> None:
    """Remove everything inside a folder, keeping the folder itself."""
    for entry in list(path.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            remove_tree(entry)
        else:
            entry.unlink()


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Locked(RuntimeError):
    """Another process holds the lock."""


class NotALockFile(OSError):
    """Something that can't be a lock file (a folder, say) is at the lock's path."""


# How long taking a lock retries before it counts as held: :func:`is_locked` holds a shared lock
# for the instant it looks, and a run starting in that instant must not be refused for it.
_PROBE_GRACE = 0.5


def _open_lock(path: Path, flags: int) -> int:
    try:
        return os.open(path, flags, 0o644)
    except IsADirectoryError:
        raise NotALockFile(f"{path}: a folder where a lock file belongs; move it away") from None


@contextlib.contextmanager
def exclusive_lock(path: Path, *, wait: bool = False) -> Iterator[None]:
    """Hold an advisory lock on ``path`` for the block; if taken, wait or raise :class:`Locked`.

    The kernel drops the lock when the holder dies, so a killed run never leaves it stuck.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open_lock(path, os.O_RDWR | os.O_CREAT)
    try:
        deadline = time.monotonic() + _PROBE_GRACE
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() > deadline:
                    raise Locked(str(path)) from None
                time.sleep(0.01)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        os.close(fd)


def is_locked(path: Path) -> bool:
    """Whether a live process holds the lock on ``path`` (it is released when its holder dies,
    however it dies, so unlike a recorded pid this can't be stale)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, IsADirectoryError):  # no run can hold a lock there
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return True
        raise
    finally:
        os.close(fd)
    return False

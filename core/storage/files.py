"""Crash-safe file writes, append-only logs and the one-process-per-Experiment lock.

A process killed at any instant leaves every file either old or new: each write goes to a
temporary file in the same folder, is fsynced, then renamed over the target. The folder is not
fsynced after the rename: that would make the new name durable at once, at a second journal
commit per write (a Trial writes several records), and the guarantee doesn't need it. After a
power loss a file is old or new all the same; a journalling filesystem (ext4, XFS) commits the
renames in the order they were made, with the next write's fsync or its own commit seconds later.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

TYPE_CHECKING = False  # typing itself is not imported: a grading sandbox's bare Python starts this for every job
if TYPE_CHECKING:
    from typing import Any


def write_bytes(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` atomically (temp file, fsync, rename)."""
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


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def walk_bottom_up(root: Path, *, unlock: bool = False) -> Iterator[tuple[int, str, int]]:
    """Every entry below the folder ``root``, each folder's entries before the folder itself, as
    (its parent folder's descriptor, its name, its ``lstat`` mode), the descriptor valid until the
    next entry.

    A Trial may leave any tree (a folder 100,000 levels deep, links everywhere), so the walk is
    iterative (``os.walk``, ``os.fwalk`` and ``shutil.rmtree`` recurse, and a folder 1,000 levels
    deep raises RecursionError), never follows a link, and holds one descriptor at a time, going
    back up by ``..`` of a folder it entered itself. With ``unlock`` each folder is made ``0700``
    before it is entered (a Trial may leave some unreadable); a folder that can't be entered is
    given as it is, without its entries. Nothing may change the tree meanwhile.
    """
    fd = os.open(root, _FOLDER)
    pending = [os.listdir(fd)]  # names still to give, per level
    entered: list[tuple[str, int]] = []  # the folders descended into, with their modes
    try:
        while True:
            if pending[-1]:
                name = pending[-1].pop()
                try:
                    mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                except FileNotFoundError:
                    continue
                if stat.S_ISDIR(mode):
                    try:
                        if unlock:
                            os.chmod(name, 0o700, dir_fd=fd)  # a folder by its lstat: not a link to follow
                        child = os.open(name, _FOLDER, dir_fd=fd)
                    except OSError:
                        yield fd, name, mode
                        continue
                    os.close(fd)
                    fd = child
                    pending.append(os.listdir(fd))
                    entered.append((name, mode))
                    continue
                yield fd, name, mode
            else:
                pending.pop()
                if not entered:
                    return
                name, mode = entered.pop()
                parent = os.open("..", _FOLDER, dir_fd=fd)
                os.close(fd)
                fd = parent
                yield fd, name, mode
    finally:
        os.close(fd)


def remove_tree(path: Path) -> None:
    """Remove a folder (or a file or link), read-only parts included (a Trial may leave some), of
    any depth (:func:`walk_bottom_up`); a missing one is fine."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        os.unlink(path)
        return
    os.chmod(path, 0o700)
    empty_folder(path)
    os.rmdir(path)


def empty_folder(path: Path) -> None:
    """Remove everything inside a folder, of any depth, keeping the folder itself."""
    for fd, name, mode in walk_bottom_up(path, unlock=True):
        if stat.S_ISDIR(mode):
            os.rmdir(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)


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


def json_object_or_empty(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (a login file a CLI wrote), or ``{}`` if it is unreadable,
    not JSON, or not an object: the caller then treats it as no login."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}

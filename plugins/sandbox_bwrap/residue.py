"""What a Trial leaves in its writable folders, made harmless before the host reads them.

Inside the sandbox every bind is ``nosuid,nodev`` (bwrap mounts them so), but the files stay on
the host's disk: a ``chmod 4755`` there leaves a set-uid binary owned by the user running assay
(root, in CI) that anyone who can reach it runs with that user's rights. So once the Trial is
over (its PID namespace gone, so nothing races the walk) every set-uid or set-gid bit is
cleared and every device node removed. The walk (:func:`~assay.storage.files.walk_bottom_up`) is
iterative, follows no link, and changes a file through a descriptor to the very entry it examined.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

import attrs
from assay.storage.files import walk_bottom_up

PRIVILEGE_BITS = stat.S_ISUID | stat.S_ISGID


@attrs.frozen
class Defused:
    """What :func:`defuse` changed, by name: files whose set-uid/set-gid bits it cleared, device nodes it removed."""

    stripped: tuple[Path, ...] = ()
    removed: tuple[Path, ...] = ()


def defuse(folders: Iterable[Path]) -> Defused:
    """Clear set-uid/set-gid bits and remove device nodes anywhere under ``folders``, at any depth."""
    stripped: list[Path] = []
    removed: list[Path] = []
    for folder in folders:
        if not folder.is_dir() or folder.is_symlink():
            continue
        for dir_fd, name, mode in walk_bottom_up(folder):
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                os.unlink(name, dir_fd=dir_fd)
                removed.append(Path(name))
            elif mode & PRIVILEGE_BITS and (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                _clear_bits(name, dir_fd)
                stripped.append(Path(name))
    return Defused(tuple(stripped), tuple(removed))


def _clear_bits(name: str, dir_fd: int) -> None:
    """chmod the entry itself: an O_PATH descriptor needs no read permission and follows no link."""
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        mode = os.fstat(fd).st_mode
        os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(mode) & ~PRIVILEGE_BITS)
    finally:
        os.close(fd)

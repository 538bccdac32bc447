"""Names that say which process made a thing, so a later run can clean up what a dead one left.

A temporary folder, cgroup or half-built install is named ``<prefix><tag>[-…]``, where the tag is
the maker's pid and its start time: once that process is gone (a pid alone would not say so -
pids are reused when they wrap), whatever bears its tag is a leftover anyone may remove.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable
from pathlib import Path

_TAG = re.compile(r"(\d+)\.(\d+)(?=-|$)")


def process_start(pid: int | None) -> int | None:
    """When process ``pid`` started (clock ticks since boot); None if it is gone or a zombie."""
    if not pid:
        return None
    try:
        state, *fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if state in ("Z", "X") else int(fields[18])


@functools.cache
def _own_tag(pid: int) -> str:
    return f"{pid}.{process_start(pid)}"


def tag() -> str:
    """This process's tag (cached per pid, so a forked child gets its own)."""
    return _own_tag(os.getpid())


def leftovers(folder: Path, prefix: str) -> list[Path]:
    """The entries ``<prefix><tag>[-…]`` in ``folder`` whose maker is gone."""
    found = []
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if not entry.name.startswith(prefix):
                continue
            match = _TAG.match(entry.name, len(prefix))
            if match and process_start(int(match[1])) != int(match[2]):
                found.append(entry)
    return found


_swept: set[tuple[Path, str]] = set()


def sweep(folder: Path, prefix: str, remove: Callable[[Path], None]) -> None:
    """Remove every leftover of a dead process in ``folder`` with ``remove``, the first time this
    process asks (what can't be removed - a cgroup something still runs in, say - is left)."""
    if (folder, prefix) in _swept:
        return
    _swept.add((folder, prefix))
    for entry in leftovers(folder, prefix):
        with contextlib.suppress(OSError):
            remove(entry)

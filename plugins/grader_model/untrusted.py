"""Reading what a Trial left behind, which is untrusted input.

A session may leave a link to a host file (the user's credentials, the other Arm's report), a
FIFO that would block the reader, a device, or a file too big to paste. Each path component is
opened relative to the Trial's own folder without following links, each report is opened
``O_NOFOLLOW | O_NONBLOCK`` and checked to be a regular file under a size cap, and anything else
is refused with why: the Arm's failure, never a host read.

(A local helper until the core's shared safe-read lands; the two should become one.)
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

REPORT_LIMIT = 256 * 1024  # bytes per report; a review longer than this is not a review


class Refused(Exception):
    """A Trial's file that assay will not read; the message says why, naming the file."""


def read_untrusted_reports(trial: Path, where: Sequence[str], suffix: str = ".md",
                           limit: int = REPORT_LIMIT) -> list[tuple[str, str]]:
    """Every ``*suffix`` file directly in ``trial/<where...>`` as (name, text), sorted by name.

    ``where`` is walked one folder at a time without following links. A missing folder yields
    no reports; a linked folder, or a report that is a link, not a regular file, too big or not
    UTF-8, raises :class:`Refused`.
    """
    shown = "~/" + "/".join(where[1:]) if where and where[0] == "home" else "/".join(where)
    fd = os.open(trial, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in where:
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                return []
            except OSError as e:  # a link (ELOOP), a file (ENOTDIR), unreadable
                raise Refused(f"{shown} is not a plain folder ({_kind(fd, part)}); nothing in it was read") from e
            os.close(fd)
            fd = inner
        names = sorted(n for n in os.listdir(fd) if n.endswith(suffix))
        return [(name, _read_one(fd, name, f"the report {shown}/{name}", limit)) for name in names]
    finally:
        os.close(fd)


def read_untrusted_file(folder: Path, name: str, limit: int = REPORT_LIMIT) -> str:
    """One file a session wrote directly in ``folder`` (say, a Grader's answer), read as a report is."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return _read_one(fd, name, name, limit)
    finally:
        os.close(fd)


def _read_one(folder: int, name: str, shown: str, limit: int) -> str:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=folder)
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise FileNotFoundError(shown) from None
        raise Refused(f"{shown} is {_kind(folder, name)}, not a regular file; it was not read") from e
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{shown} is {_kind(folder, name)}, not a regular file; it was not read")
        if info.st_size > limit:
            raise Refused(f"{shown} is {info.st_size} bytes, over the {limit}-byte limit; it was not read")
        data = b""
        while len(data) <= limit and (chunk := os.read(fd, limit + 1 - len(data))):
            data += chunk
        if len(data) > limit:  # it grew after the check
            raise Refused(f"{shown} is over the {limit}-byte limit; it was not read")
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Refused(f"{shown} is not UTF-8 text ({e.reason} at byte {e.start})") from None


def _kind(folder: int, name: str) -> str:
    """What a refused entry is, for the reason (read with lstat: never through a link)."""
    try:
        mode = os.lstat(name, dir_fd=folder).st_mode
    except OSError:
        return "unreadable"
    for test, kind in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return kind
    return "not a regular file"

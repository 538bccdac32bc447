"""Reading what a Trial left behind, which is data from an adversary.

A session can replace any file it was given with a symbolic link (to ``/dev/zero``, to another
Trial, to ``/etc/shadow``), a FIFO (an ``open`` that never returns), or something huge. So every
file assay reads from a Trial's folder is opened here: each path component below a trusted root
without following links, without blocking, and only if it is a regular file, read to a limit.
What can't be read that way is an :class:`UntrustedFileError` naming the file and why, which the
caller turns into the Arm's failure. ``CappedLog`` and ``LineBuffer`` bound what a session's
output may cost the host: a log keeps its head and tail, a line its head, each cut marked.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

TYPE_CHECKING = False  # typing itself is not imported: a grading sandbox's bare Python starts this for every job
if TYPE_CHECKING:
    from typing import TextIO

MIB = 1 << 20

_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_KINDS = {stat.S_IFREG: "a file", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder", stat.S_IFLNK: "a symbolic link"}


# Every character a terminal would act on instead of showing: C0 controls but newline and tab (CR
# too: it lets a line be overwritten), DEL, C1 controls (0x9b is a one-byte CSI), and the Unicode
# controls that reorder or hide text (bidi embeddings, overrides, isolates, marks; line and paragraph
# separators). Each is shown as its escape (\x1b, \u202e), so it is seen and never obeyed.
_VISIBLE = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if chr(c) not in "\n\t"} | {
    ord(c): f"\\u{ord(c):04x}" for c in "\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
                                       "\u2066\u2067\u2068\u2069"}


def visible(text: str) -> str:
    """Untrusted ``text`` with every control character shown as its escape: what a terminal (the
    CLI) or a page (the Console, after HTML escaping) shows of it."""
    return text.translate(_VISIBLE)


class UntrustedFileError(ValueError):
    """A file from a Trial can't be read safely; the message names it and says why."""


def read_bytes(path: Path, *, root: Path, limit: int, label: str | None = None) -> bytes:
    """``path`` (inside ``root``, which is trusted) if it is a regular file of at most ``limit`` bytes.

    Raises FileNotFoundError if it is absent and :class:`UntrustedFileError` if it is anything
    else than a plain file reached through plain folders, or too big. Messages name the file by
    its full path, or with ``label`` in place of ``root`` (``"~"`` for a Trial's home; ``""`` for
    its path inside ``root``): what a blind Grader's reason may show of where it was.
    """
    shown = _shown(path, root, label)
    fd = _open(path, root, label, directory=False)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UntrustedFileError(f"{shown} is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise UntrustedFileError(f"{shown} is {info.st_size} bytes, over its limit of {limit}")
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, min(MIB, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise UntrustedFileError(f"{shown} grew past its limit of {limit} bytes while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_from(path: Path, *, root: Path, offset: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``path`` (inside ``root``, reached as :func:`read_bytes` reaches it,
    a regular file of any size) from ``offset`` on: the new part of a log a session keeps writing."""
    fd = _open(path, root, None, directory=False)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UntrustedFileError(f"{path} is {_kind(info.st_mode)}, not a regular file")
        return os.pread(fd, limit, offset)
    finally:
        os.close(fd)


def read_text(path: Path, *, root: Path, limit: int, label: str | None = None) -> str:
    """:func:`read_bytes` decoded as UTF-8 (undecodable bytes replaced)."""
    return read_bytes(path, root=root, limit=limit, label=label).decode(errors="replace")


def json_object(text: str, *, limit: int, what: str) -> dict:
    """``text`` (a line a sandbox sent back, say) as a JSON object of at most ``limit`` characters.

    Raises :class:`UntrustedFileError` naming ``what`` if it is longer, not JSON, nested too deep
    for the parser, or not an object.
    """
    if len(text) > limit:
        raise UntrustedFileError(f"{what} is {len(text)} characters, over its limit of {limit}")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise UntrustedFileError(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise UntrustedFileError(f"{what} is not a JSON object")
    return value


def list_folder(path: Path, *, root: Path, label: str | None = None) -> list[str]:
    """The names in folder ``path`` (inside ``root``), reached without following links; sorted."""
    fd = _open(path, root, label, directory=True)
    try:
        return sorted(os.listdir(fd))
    finally:
        os.close(fd)


def read_texts(folder: Path, *, root: Path, suffix: str, limit: int, label: str | None = None) -> list[str]:
    """The texts of the files named ``*suffix`` in ``folder`` (by name), at most ``limit`` bytes in all.

    An absent folder has none; anything in it with that suffix but not a regular file is an error.
    """
    try:
        names = [n for n in list_folder(folder, root=root, label=label) if n.endswith(suffix)]
    except FileNotFoundError:
        return []
    texts = []
    for name in names:
        data = read_bytes(folder / name, root=root, limit=limit, label=label)
        limit -= len(data)
        texts.append(data.decode(errors="replace"))
    return texts


def _shown(path: Path, root: Path, label: str | None) -> str:
    if label is None:
        return str(path)
    inside = path.relative_to(root).as_posix()
    return f"{label}/{inside}" if label else inside


def _open(path: Path, root: Path, label: str | None, *, directory: bool) -> int:
    """Walk from ``root`` to ``path`` one component at a time, never through a link."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise UntrustedFileError(f"{path if label is None else path.name} is not inside {label or root}") from None
    if not parts or ".." in parts:
        raise UntrustedFileError(f"{_shown(path, root, label)} is not a file inside {label or root}")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = _OPEN | (os.O_DIRECTORY if directory or not last else 0)
            try:
                child = os.open(part, flags, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = root.joinpath(*parts[:i + 1])
                    raise UntrustedFileError(f"{_shown(where, root, label)} is {_kind(os.lstat(where).st_mode)}, not a plain "
                                             f"{'file' if last and not directory else 'folder'}") from None
                raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def cut_marker(cut: int) -> str:
    return f"\n[... assay cut {cut} bytes here ...]\n"


@contextlib.contextmanager
def capped_log(path: Path, *, head: int = 4 * MIB, tail: int = 4 * MIB) -> Iterator[CappedLog]:
    """A new text log at ``path`` that keeps its head and tail (see :class:`CappedLog`)."""
    with open(path, "w") as sink:
        log = CappedLog(sink, head=head, tail=tail)
        try:
            yield log
        finally:
            log.close()


class CappedLog(io.TextIOBase):
    """A text log that keeps its first ``head`` and last ``tail`` characters, the cut marked.

    The head goes to ``sink`` as it comes; the tail waits in memory (at most twice ``tail``
    characters) until :meth:`close`, which writes the marker and the tail.
    """

    def __init__(self, sink: TextIO, *, head: int = 4 * MIB, tail: int = 4 * MIB):
        super().__init__()
        self._sink, self._head, self._tail = sink, head, tail
        self._written = 0
        self._kept: list[str] = []
        self._kept_size = 0
        self._cut = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        size = len(text)
        room = self._head - self._written
        if room > 0:
            self._sink.write(text[:room])
            self._written += min(room, len(text))
            text = text[room:]
        if text:
            self._kept.append(text)
            self._kept_size += len(text)
            if self._kept_size > 2 * self._tail:
                self._trim()
        return size

    def flush(self) -> None:
        if not self.closed:
            self._sink.flush()

    def close(self) -> None:
        """Write what the tail holds (after the marker, if anything was cut); the sink stays open."""
        if self.closed:
            return
        self._trim()
        if self._cut:
            self._sink.write(cut_marker(self._cut))
        self._sink.write("".join(self._kept))
        self._kept, self._kept_size = [], 0
        self._sink.flush()
        super().close()

    def _trim(self) -> None:
        joined = "".join(self._kept)
        over = max(0, len(joined) - self._tail)
        self._cut += over
        self._kept, self._kept_size = [joined[over:]], len(joined) - over


class LineBuffer:
    """Splits a byte stream into lines, keeping at most ``limit`` bytes of any one line.

    A longer line is cut: its head is kept, the rest dropped up to its newline, and a marker
    says how much went; so the host holds at most ``limit`` bytes whatever a session prints.
    """

    def __init__(self, limit: int):
        self._limit = limit
        self._pending: list[bytes] = []
        self._size = 0
        self._dropped = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completes (newlines stripped)."""
        *whole, rest = chunk.split(b"\n")
        lines = []
        for piece in whole:
            self._keep(piece)
            lines.append(self._take())
        self._keep(rest)
        return lines

    def finish(self) -> bytes | None:
        """The unterminated last line, if there is one."""
        return self._take() if self._size or self._dropped else None

    def _keep(self, piece: bytes) -> None:
        room = self._limit - self._size
        if len(piece) > room:
            self._dropped += len(piece) - room
            piece = piece[:room]
        if piece:
            self._pending.append(piece)
            self._size += len(piece)

    def _take(self) -> bytes:
        line = b"".join(self._pending)
        if self._dropped:
            line += cut_marker(self._dropped).strip().encode()
        self._pending, self._size, self._dropped = [], 0, 0
        return line

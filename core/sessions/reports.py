"""Following the usage reports a CLI writes beside its stream, while its session runs.

Some CLIs keep their plan's usage only in files in their home (Codex: its rollout's
``token_count`` events, which ``codex exec --json`` never prints). A Harness that says where
(:class:`assay.hooks.protocols.ReportingHarness`) has those files read as they grow, every
:data:`POLL` seconds and once more at the end, and each new complete line given to its decoder
(:class:`assay.hooks.protocols.ReportDecoder`). The files are the session's, so they are read
as untrusted: below its home, never through a link, a bounded chunk at a time; a line longer
than a chunk is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from assay.storage.untrusted import MIB, UntrustedFileError, read_from

POLL = 2.0  # seconds between reads
CHUNK = MIB  # the most read of one file at a time, and the longest line kept


@attrs.define
class ReportFollower:
    """The new lines of the files ``find(home)`` names, each fed to ``feed`` once. ``where(home)`` is
    where the home is read now: while its session runs, a sandbox may keep its writes elsewhere
    (:class:`assay.hooks.protocols.LiveFolders`); each file is known by its path below the home."""

    home: Path
    find: Callable[[Path], Sequence[Path]]
    feed: Callable[[str], None]
    where: Callable[[Path], Path] | None = None
    _offsets: dict[Path, int] = attrs.field(factory=dict)
    _partial: dict[Path, bytes] = attrs.field(factory=dict)
    _skipping: set[Path] = attrs.field(factory=set)  # a line longer than CHUNK: dropped up to its end

    def poll(self) -> None:
        """Read what each file gained since the last poll."""
        root = self.where(self.home) if self.where is not None else self.home
        try:
            paths = self.find(root)
        except (OSError, UntrustedFileError):
            return
        for path in paths:
            while self._read(root, path):
                pass

    def _read(self, root: Path, path: Path) -> bool:
        """Feed the complete lines of the next chunk of ``path``; whether there may be more."""
        name = path.relative_to(root)
        offset = self._offsets.get(name, 0)
        try:
            data = read_from(path, root=root, offset=offset, limit=CHUNK)
        except (OSError, UntrustedFileError):
            return False
        if not data:
            return False
        self._offsets[name] = offset + len(data)
        *lines, rest = (self._partial.pop(name, b"") + data).split(b"\n")
        for i, line in enumerate(lines):
            if i == 0 and name in self._skipping:
                self._skipping.discard(name)
                continue
            self.feed(line.decode(errors="replace"))
        if len(rest) > CHUNK:
            self._skipping.add(name)
        else:
            self._partial[name] = rest
        return len(data) == CHUNK

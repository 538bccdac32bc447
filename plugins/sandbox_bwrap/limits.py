"""A Trial's limits as one cap the handshake admits the relay to: memory (:mod:`.memory`),
processes (:mod:`.pids`) and the size of each file it writes, started and removed together.

The file-size limit (``RLIMIT_FSIZE``, inherited by all the relay starts) holds everywhere: a write
past it fails (EFBIG, or SIGXFSZ kills the writer). The cap on a Trial's total writes is a file
system of its own (:mod:`.disk`), where this machine allows one.
"""

from __future__ import annotations

import os
import resource

import attrs
from assay.hooks.protocols import Limit
from assay.plugins.sandbox_bwrap import broker, disk, memory, pids, seccomp

FILE_SIZE_ENV = "ASSAY_TRIAL_FILE_SIZE"
DEFAULT_FILE_SIZE = 4 << 30


def file_size_limit() -> int:
    """``$ASSAY_TRIAL_FILE_SIZE`` (e.g. ``1G``) if set, else 4 GiB."""
    raw = os.environ.get(FILE_SIZE_ENV, "").strip()
    try:
        return memory.parse_size(raw) if raw else DEFAULT_FILE_SIZE
    except ValueError as e:
        raise ValueError(f"{FILE_SIZE_ENV}: {e}") from None


@attrs.frozen
class TrialLimits:
    """Satisfies :class:`.memory.TrialCap`; only the memory cap kills."""

    memory: memory.TrialCap
    pids: pids.PidsCgroup | pids.ProcessRlimit | pids.Unlimited
    file_size: int

    @classmethod
    def start(cls, memory_caps: memory.MemoryCaps, memory_limit: int, pids_caps: pids.PidsCaps,
              pids_limit: int, file_size: int) -> TrialLimits:
        cap = memory_caps.start(memory_limit)
        try:
            return cls(cap, pids_caps.start(pids_limit), file_size)
        except BaseException:
            cap.remove()
            raise

    def admit(self, pid: int) -> None:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (self.file_size, self.file_size))
        self.pids.admit(pid)
        self.memory.admit(pid)

    def killed(self) -> bool:
        return self.memory.killed()

    def notes(self) -> str:
        """Lines for the Trial's stderr about limits it reached without being killed."""
        return "assay sandbox: the Trial reached its process limit\n" if self.pids.hit() else ""

    def remove(self) -> None:
        try:
            self.pids.remove()
        finally:
            self.memory.remove()


def in_force(memory_caps: memory.MemoryCaps, memory_limit: int, pids_caps: pids.PidsCaps, pids_limit: int,
             disk_caps: disk.DiskCaps, disk_limit: int, file_size: int) -> tuple[Limit, ...]:
    """Each limit a Trial gets on this machine, for ``assay sandbox check``."""
    return (
        Limit("memory", True, memory_caps.describe(memory_limit)),
        Limit("pids", pids_caps.in_force, pids_caps.describe(pids_limit)),
        Limit("disk", disk_caps.in_force,
              f"{disk_caps.describe(disk_limit)}; each file at most {file_size / (1 << 30):.2f} GiB (rlimit fsize)"),
        Limit("seccomp", seccomp.supported(), seccomp.describe() if seccomp.supported() else seccomp.why_not()),
        Limit("broker", True, broker.DESCRIPTION),
    )

"""A Trial's limits as one cap the handshake admits the relay to: memory (:mod:`.memory`),
processes (:mod:`.pids`) and the size of each file it writes, started and removed together.

The file-size limit (``RLIMIT_FSIZE``, inherited by all the relay starts) holds everywhere: a write
past it fails (EFBIG, or SIGXFSZ kills the writer). The cap on a Trial's total writes is a file
system of its own (:mod:`.disk`), where this machine allows one.
"""

from __future__ import annotations

import resource

import attrs
from assay.hooks.protocols import Limit
from assay.plugins.sandbox_bwrap import broker, disk, memory, pids, relays, seccomp
from assay.storage.sizes import size_from_env

FILE_SIZE_ENV = "ASSAY_TRIAL_FILE_SIZE"
DEFAULT_FILE_SIZE = 4 << 30


def file_size_limit() -> int:
    """``$ASSAY_TRIAL_FILE_SIZE`` (e.g. ``1G``) if set, else 4 GiB."""
    return size_from_env(FILE_SIZE_ENV, DEFAULT_FILE_SIZE)


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

    def peak(self) -> int | None:
        return self.memory.peak()

    def notes(self) -> str:
        """Lines for the Trial's stderr about limits it reached without being killed."""
        return "assay sandbox: the Trial reached its process limit\n" if self.pids.hit() else ""

    def remove(self) -> None:
        try:
            self.pids.remove()
        finally:
            self.memory.remove()


def in_force(memory_caps: memory.MemoryCaps, memory_limit: int, pids_caps: pids.PidsCaps, pids_limit: int,
             disk_caps: disk.DiskCaps, disk_limit: int, file_size: int, memory_source: str = "",
             relay: relays.Relay | None = None) -> tuple[Limit, ...]:
    """Each limit a Trial gets on this machine, for ``assay sandbox check`` (``memory_source``: where
    the memory cap's size comes from), and which ``relay`` keeps them as its PID 1 (the Python one
    holds them as well, at more CPU per Trial)."""
    return (
        Limit("memory", True, "; ".join(filter(None, (memory_caps.describe(memory_limit), memory_source)))),
        Limit("pids", pids_caps.in_force, pids_caps.describe(pids_limit)),
        Limit("disk", disk_caps.in_force,
              f"{disk_caps.describe(disk_limit)}; each file at most {file_size / (1 << 30):.2f} GiB (rlimit fsize)"),
        Limit("seccomp", seccomp.supported(), seccomp.describe() if seccomp.supported() else seccomp.why_not()),
        Limit("broker", True, broker.DESCRIPTION),
        *((Limit("relay", True, relay.describe()),) if relay is not None else ()),
    )

"""A process limit of its own for each Trial, so a fork bomb fills the Trial's budget, not the machine's.

The cgroup pids controller where we may make children in it (cgroup v2 delegating ``pids``, else
the v1 hierarchy): a child with ``pids.max``, which counts every task (thread) in the Trial.
Else, where bwrap gives the Trial a user namespace of its own (assay not run as root),
``RLIMIT_NPROC`` on the relay: the kernel counts it per user *per user namespace*, so it bounds
the Trial's processes alone. As root neither holds (the kernel never enforces ``RLIMIT_NPROC``
for root), so a Trial then has no process limit, and ``assay sandbox check`` says so.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import attrs
from assay.plugins.sandbox_bwrap import cgroups

PIDS_ENV = "ASSAY_TRIAL_PIDS"
DEFAULT_LIMIT = 2048  # tasks: threads count too (node, a JVM or a parallel build start many)


def default_limit() -> int:
    """``$ASSAY_TRIAL_PIDS`` if set, else :data:`DEFAULT_LIMIT`."""
    raw = os.environ.get(PIDS_ENV, "").strip()
    if not raw:
        return DEFAULT_LIMIT
    if not raw.isdigit() or int(raw) < 16:
        raise ValueError(f"{PIDS_ENV}={raw!r} is not a process count of at least 16")
    return int(raw)


@attrs.frozen
class PidsCgroup:
    """One Trial's pids cgroup."""

    path: Path

    def admit(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def killed(self) -> bool:
        return False  # a fork past the limit fails (EAGAIN); nothing is killed

    def hit(self) -> bool:
        """Whether a fork failed for the limit."""
        return cgroups.counters(self.path / "pids.events").get("max", 0) > 0

    def remove(self) -> None:
        cgroups.remove(self.path)


@attrs.frozen
class ProcessRlimit:
    """The fallback: ``RLIMIT_NPROC`` on the relay, counted in the Trial's own user namespace."""

    limit: int

    def admit(self, pid: int) -> None:
        resource.prlimit(pid, resource.RLIMIT_NPROC, (self.limit, self.limit))

    def killed(self) -> bool:
        return False

    def hit(self) -> bool:
        return False  # the kernel doesn't count failed forks here

    def remove(self) -> None:
        return None


@attrs.frozen
class Unlimited:
    """Where no process limit can hold (root without a pids cgroup)."""

    def admit(self, pid: int) -> None:
        return None

    def killed(self) -> bool:
        return False

    def hit(self) -> bool:
        return False

    def remove(self) -> None:
        return None


@attrs.frozen
class PidsCaps:
    """How Trials' processes are limited here: ``kind`` and, for a cgroup, the parent."""

    kind: str  # "cgroup v2", "cgroup v1", "rlimit nproc" or "none"
    parent: Path | None = None

    @property
    def in_force(self) -> bool:
        return self.kind != "none"

    def describe(self, limit: int) -> str:
        if self.kind == "none":
            return "none: no pids cgroup here, and the kernel never limits root's processes by rlimit"
        where = f" under {self.parent}" if self.parent else " in the Trial's user namespace"
        return f"{self.kind}, {limit} tasks{where}"

    def start(self, limit: int) -> PidsCgroup | ProcessRlimit | Unlimited:
        """A fresh limit of ``limit`` tasks for one Trial."""
        if self.kind == "none":
            return Unlimited()
        if self.parent is None:
            return ProcessRlimit(limit)
        path = cgroups.child(self.parent)
        try:
            (path / "pids.max").write_text(str(limit))
        except BaseException:
            path.rmdir()
            raise
        return PidsCgroup(path)


def detect(proc_self: Path = Path("/proc/self")) -> PidsCaps:
    """The process limit this process can give its Trials (see the module docstring)."""
    found = cgroups.writable("pids", "cgroup.procs", proc_self)  # v1's root has no pids.max
    if found:
        return PidsCaps(*found)
    return PidsCaps("rlimit nproc") if os.geteuid() != 0 else PidsCaps("none")

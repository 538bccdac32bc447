"""A memory cap of its own for each Trial, with the strongest mechanism this machine offers.

In order: a cgroup v2 child with ``memory.max``, where our own cgroup delegates the memory
controller and is writable; else a child in the cgroup v1 memory controller; else a per-process
data limit (``RLIMIT_DATA``; an address-space limit would break node and java, which reserve
far more than they use). A cgroup counts its OOM kills, so a Trial killed by its cap is known;
under the data limit an allocation past the cap fails instead (ENOMEM), which can't be told
apart from any other crash.

The backend admits the sandbox's first process (the relay, before it starts anything) to the
cap, and raises its ``oom_score_adj`` to the maximum; its children inherit all of it, so when
the whole machine is short the kernel kills a Trial before anything else.
"""

from __future__ import annotations

import contextlib
import os
import resource
from pathlib import Path
from typing import Protocol

import attrs
from assay.plugins.sandbox_bwrap import cgroups
from assay.storage.sizes import parse_size

MEMORY_ENV = "ASSAY_TRIAL_MEMORY"


def default_limit(proc: Path = Path("/proc")) -> int:
    """``$ASSAY_TRIAL_MEMORY`` if set, else half of this machine's memory."""
    if os.environ.get(MEMORY_ENV):
        return parse_size(os.environ[MEMORY_ENV])
    total_kib = next(int(line.split()[1]) for line in (proc / "meminfo").read_text().splitlines()
                     if line.startswith("MemTotal:"))
    return total_kib * 1024 // 2


class TrialCap(Protocol):
    """One Trial's cap, from just before its sandbox starts until it is gone."""

    def admit(self, pid: int) -> None:
        """Put process ``pid`` (and so all it starts later) under the cap, first to die in an OOM."""

    def killed(self) -> bool:
        """Whether the kernel has killed a process of this Trial for going past its cap."""

    def remove(self) -> None:
        """Remove whatever the cap made, once the Trial's processes are gone."""


@attrs.frozen
class Cgroup:
    """One Trial's cgroup (v1 or v2); the kernel counts its OOM kills."""

    path: Path
    events: str  # the file holding the "oom_kill N" counter

    def admit(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))
        _raise_oom_score(pid)

    def killed(self) -> bool:
        return cgroups.counters(self.path / self.events).get("oom_kill", 0) > 0

    def remove(self) -> None:
        cgroups.remove(self.path)


@attrs.frozen
class DataLimit:
    """The fallback: ``RLIMIT_DATA`` on every process of the Trial (each one, not their sum)."""

    limit: int

    def admit(self, pid: int) -> None:
        resource.prlimit(pid, resource.RLIMIT_DATA, (self.limit, self.limit))
        _raise_oom_score(pid)

    def killed(self) -> bool:
        return False

    def remove(self) -> None:
        return None


@attrs.frozen
class MemoryCaps:
    """The mechanism that caps Trials on this machine: ``kind`` and, for a cgroup, the parent."""

    kind: str  # "cgroup v2", "cgroup v1" or "rlimit data"
    parent: Path | None = None

    def describe(self, limit: int) -> str:
        where = f" under {self.parent}" if self.parent else " per process (a cap can't be told from a crash)"
        return f"{self.kind}, {limit / (1 << 30):.2f} GiB{where}"

    def start(self, limit: int) -> TrialCap:
        """A fresh cap of ``limit`` bytes for one Trial."""
        if self.parent is None:
            return DataLimit(limit)
        path = cgroups.child(self.parent)
        try:
            if self.kind == "cgroup v2":
                (path / "memory.max").write_text(str(limit))
                _write_if_present(path / "memory.swap.max", "0")
                (path / "memory.oom.group").write_text("1")  # an OOM kill takes the whole Trial
                return Cgroup(path, "memory.events")
            (path / "memory.limit_in_bytes").write_text(str(limit))
            _write_if_present(path / "memory.memsw.limit_in_bytes", str(limit))  # no escape into swap
            return Cgroup(path, "memory.oom_control")
        except BaseException:
            path.rmdir()
            raise


def detect(proc_self: Path = Path("/proc/self")) -> MemoryCaps:
    """The strongest memory cap this process can give its Trials (see the module docstring)."""
    found = cgroups.writable("memory", "memory.limit_in_bytes", proc_self)
    return MemoryCaps(*found) if found else MemoryCaps("rlimit data")


def _raise_oom_score(pid: int) -> None:
    Path(f"/proc/{pid}/oom_score_adj").write_text("1000")


def _write_if_present(path: Path, value: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.write_text(value)

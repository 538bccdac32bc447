"""A memory cap of its own for each Trial, with the strongest mechanism this machine offers.

In order: a cgroup v2 child with ``memory.max``, where our own cgroup delegates the memory
controller and is writable; else a child in the cgroup v1 memory controller; else a per-process
data limit (``RLIMIT_DATA``; an address-space limit would break node and java, which reserve
far more than they use). A cgroup counts its OOM kills, so a Trial killed by its cap is known;
under the data limit an allocation past the cap fails instead (ENOMEM), which can't be told
apart from any other crash. A cgroup also gets a soft limit a little below the cap
(:data:`SOFT_SHARE`): on v2 ``memory.high``, past which the kernel throttles and reclaims, so a
session slows before it is killed; on v1 ``memory.soft_limit_in_bytes``, which the kernel
reclaims a Trial down to first when the machine runs short. It keeps its peak, too, which
``assay harnesses check`` records as a Harness's footprint (:mod:`assay.storage.footprints`).

The default cap comes from that footprint: :data:`HEADROOM` times the largest session peak
measured, at least :data:`FLOOR` (a session's tools — builds, tests — need far more than its CLI
idle) and at most half this machine; half the machine until a footprint is measured.

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
from assay.storage.home import AssayHome
from assay.storage.sizes import parse_size

MEMORY_ENV = "ASSAY_TRIAL_MEMORY"
SOFT_SHARE = 0.9  # the soft limit, as a share of the cap
HEADROOM = 16  # the default cap, in measured session peaks
FLOOR = 4 << 30  # the least default cap


def default_limit(proc: Path = Path("/proc"), home: AssayHome | None = None) -> int:
    """``$ASSAY_TRIAL_MEMORY`` if set, else the cap measured footprints give (at most half this
    machine's memory), else half this machine's memory."""
    return default_and_source(proc, home)[0]


def default_and_source(proc: Path = Path("/proc"), home: AssayHome | None = None) -> tuple[int, str]:
    """The default cap and where it comes from, in words (``assay sandbox check`` says it)."""
    if os.environ.get(MEMORY_ENV):
        return parse_size(os.environ[MEMORY_ENV]), f"from ${MEMORY_ENV}"
    total_kib = next(int(line.split()[1]) for line in (proc / "meminfo").read_text().splitlines()
                     if line.startswith("MemTotal:"))
    half = total_kib * 1024 // 2
    from assay.storage import footprints  # cattrs: only once a cap is wanted

    measured = footprints.read(home or AssayHome.from_env())
    if not measured:
        return half, "half this machine: no footprint measured yet (assay harnesses check)"
    harness, peak = max(((name, f.peak_bytes) for name, f in measured.items()), key=lambda item: item[1])
    cap = min(max(HEADROOM * peak, FLOOR), half)
    return cap, (f"{HEADROOM} x the largest session peak measured ({harness}: {peak / (1 << 20):.0f} MiB), "
                 f"at least {FLOOR >> 30} GiB, at most half this machine")


class TrialCap(Protocol):
    """One Trial's cap, from just before its sandbox starts until it is gone."""

    def admit(self, pid: int) -> None:
        """Put process ``pid`` (and so all it starts later) under the cap, first to die in an OOM."""

    def killed(self) -> bool:
        """Whether the kernel has killed a process of this Trial for going past its cap."""

    def remove(self) -> None:
        """Remove whatever the cap made, once the Trial's processes are gone."""

    def peak(self) -> int | None:
        """The most memory the Trial held at once, in bytes, where the cap keeps count."""


@attrs.frozen
class Cgroup:
    """One Trial's cgroup (v1 or v2); the kernel counts its OOM kills."""

    path: Path
    events: str  # the file holding the "oom_kill N" counter
    peak_file: str = "memory.peak"  # v2 (Linux 5.19 and later); v1: memory.max_usage_in_bytes

    def admit(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))
        _raise_oom_score(pid)

    def killed(self) -> bool:
        return cgroups.counters(self.path / self.events).get("oom_kill", 0) > 0

    def peak(self) -> int | None:
        text = cgroups.read(self.path / self.peak_file).strip()
        return int(text) if text.isdigit() else None

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

    def peak(self) -> int | None:
        return None


@attrs.frozen
class MemoryCaps:
    """The mechanism that caps Trials on this machine: ``kind`` and, for a cgroup, the parent."""

    kind: str  # "cgroup v2", "cgroup v1" or "rlimit data"
    parent: Path | None = None

    def describe(self, limit: int) -> str:
        if self.parent is None:
            return f"{self.kind}, {limit / (1 << 30):.2f} GiB per process (a cap can't be told from a crash)"
        soft = "memory.high" if self.kind == "cgroup v2" else "soft limit"
        return (f"{self.kind}, {limit / (1 << 30):.2f} GiB ({soft} {soft_limit(limit) / (1 << 30):.2f} GiB) "
                f"under {self.parent}")

    def start(self, limit: int) -> TrialCap:
        """A fresh cap of ``limit`` bytes for one Trial."""
        if self.parent is None:
            return DataLimit(limit)
        path = cgroups.child(self.parent)
        try:
            if self.kind == "cgroup v2":
                (path / "memory.max").write_text(str(limit))
                (path / "memory.high").write_text(str(soft_limit(limit)))  # throttled before it is killed
                _write_if_present(path / "memory.swap.max", "0")
                (path / "memory.oom.group").write_text("1")  # an OOM kill takes the whole Trial
                return Cgroup(path, "memory.events")
            (path / "memory.limit_in_bytes").write_text(str(limit))
            (path / "memory.soft_limit_in_bytes").write_text(str(soft_limit(limit)))  # reclaimed first
            _write_if_present(path / "memory.memsw.limit_in_bytes", str(limit))  # no escape into swap
            return Cgroup(path, "memory.oom_control", "memory.max_usage_in_bytes")
        except BaseException:
            path.rmdir()
            raise


def soft_limit(limit: int) -> int:
    """The soft limit under a cap of ``limit`` bytes, page-aligned."""
    return int(limit * SOFT_SHARE) // 4096 * 4096


def detect(proc_self: Path = Path("/proc/self")) -> MemoryCaps:
    """The strongest memory cap this process can give its Trials (see the module docstring)."""
    found = cgroups.writable("memory", "memory.limit_in_bytes", proc_self)
    return MemoryCaps(*found) if found else MemoryCaps("rlimit data")


def _raise_oom_score(pid: int) -> None:
    Path(f"/proc/{pid}/oom_score_adj").write_text("1000")


def _write_if_present(path: Path, value: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.write_text(value)

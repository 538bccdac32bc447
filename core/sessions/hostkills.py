"""Telling a kill from outside the sandbox (void) from one inside it (the Arm's fail).

A session SIGKILLed from inside its own sandbox (an agent's ``kill -9 $$``) is the Arm's doing:
a fail, so an Arm can't veto a Verdict by voiding on purpose. Only a kill from outside is void
``host_kill``: the kernel's OOM killer when the machine runs short (seen as a rise in its count
in ``/proc/vmstat`` while the session ran), or the sandbox itself killed (a backend that can
tell, as bwrap's relay can, says so on its own). assay's own kills — a timeout, a Stop, the
memory cap — are told apart by the backend before this is asked.
"""

from __future__ import annotations

import signal
from pathlib import Path

import attrs
from assay.hooks.protocols import ProcessResult
from assay.storage.records import VoidCause

VMSTAT = Path("/proc/vmstat")


def oom_kills() -> int | None:
    """How many processes the kernel's OOM killer has killed since boot; None where it doesn't say."""
    try:
        for line in VMSTAT.read_text().splitlines():
            name, _, count = line.partition(" ")
            if name == "oom_kill":
                return int(count)
    except (OSError, ValueError):
        pass
    return None


def judge(result: ProcessResult, oom_before: int | None) -> ProcessResult:
    """``result`` (its ``exit_code`` the session command's own), void ``host_kill`` if that command
    ended by a SIGKILL that was not assay's while the OOM killer was at work (``oom_before``: the
    count of :func:`oom_kills` when the session started)."""
    if result.void_cause is not None or result.timed_out or result.exit_code != -signal.SIGKILL:
        return result
    after = oom_kills()
    if oom_before is not None and after is not None and after > oom_before:
        return attrs.evolve(result, void_cause=VoidCause.HOST_KILL)
    return result

"""The pass-through backend itself; see the package's docstring."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
from assay.hooks.protocols import Invocation, Limit, ProcessResult, SandboxCheck
from assay.sessions import hostkills
from assay.sessions.supervise import Supervisor

REAPER = Path(__file__).with_name("reaper.py")


@attrs.frozen
class NoneBackend(Supervisor):
    """Runs an :class:`Invocation` as a child process in a session of its own."""

    name = "none"

    def check(self) -> SandboxCheck:
        return SandboxCheck(works=True, reason="pass-through: no isolation, no network limit, no memory cap",
                            limits=tuple(Limit(name, False, "pass-through: no limit")
                                         for name in ("memory", "pids", "disk", "seccomp", "broker")))

    async def run(
        self, invocation: Invocation, *, timeout: float, on_line: Callable[[str], None]
    ) -> ProcessResult:
        # The reaper's lifeline: this process alone holds the write end (not inherited by any
        # child), so the reaper sees end-of-file the moment this process dies, however it dies.
        lifeline, held = os.pipe()
        ours = [lifeline, held]
        oom_before = hostkills.oom_kills()

        def hand_over() -> None:  # the reaper has its copy of the read end now
            os.close(ours.pop(0))

        try:
            result = await self.supervise(
                (sys.executable, "-S", "-I", str(REAPER), str(lifeline), *invocation.argv), cwd=invocation.cwd,
                env=invocation.env, timeout=timeout, on_line=on_line,
                stop_signals=invocation.stop_signals, pass_fds=(lifeline,), on_start=hand_over,
            )
        finally:
            for fd in ours:
                os.close(fd)
        return hostkills.judge(result, oom_before)

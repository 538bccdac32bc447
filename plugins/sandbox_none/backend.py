"""The pass-through backend itself; see the package's docstring."""

from __future__ import annotations

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
                                         for name in ("memory", "pids", "disk", "seccomp")))

    async def run(
        self, invocation: Invocation, *, timeout: float, on_line: Callable[[str], None]
    ) -> ProcessResult:
        oom_before = hostkills.oom_kills()
        result = await self.supervise(
            (sys.executable, "-S", "-I", str(REAPER), *invocation.argv), cwd=invocation.cwd,
            env=invocation.env, timeout=timeout, on_line=on_line,
            stop_signals=invocation.stop_signals,
        )
        return hostkills.judge(result, oom_before)

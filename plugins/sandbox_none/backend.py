"""The pass-through backend itself; see the package's docstring."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs
from assay.hooks.protocols import Invocation, Limit, ProcessResult, SandboxCheck
from assay.plugins.sandbox_none import spawner
from assay.sessions import hostkills
from assay.sessions.spawn import Started
from assay.sessions.supervise import Supervisor
from assay.storage.records import VoidCause

LOST = ("\nassay: the pass-through backend's reaper server and the session's reaper both died: how the session "
        "ended is unknown")


@attrs.frozen
class NoneBackend(Supervisor):
    """Runs an :class:`Invocation` under a reaper of its own (``reaper.py``), in a session of its own."""

    name = "none"

    def check(self) -> SandboxCheck:
        return SandboxCheck(works=True, reason="pass-through: no isolation, no network limit, no memory cap",
                            limits=tuple(Limit(name, False, "pass-through: no limit")
                                         for name in ("memory", "pids", "disk", "seccomp", "broker")))

    async def run(
        self, invocation: Invocation, *, timeout: float, on_line: Callable[[str], None]
    ) -> ProcessResult:
        oom_before = hostkills.oom_kills()
        result = await self.supervise(
            invocation.argv, cwd=invocation.cwd, env=invocation.env, timeout=timeout, on_line=on_line,
            stop_signals=invocation.stop_signals,
        )
        if result.exit_code is None:  # nobody can say how it ended: the host's fault, never the Arm's
            return attrs.evolve(result, void_cause=VoidCause.SANDBOX_FAILED, stderr_tail=result.stderr_tail + LOST)
        return hostkills.judge(result, oom_before)

    async def start(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                    pass_fds: Sequence[int]) -> Started:
        """Through this process's reaper server: a fork of it, not of this process, and no Python to start."""
        assert not pass_fds, "the pass-through backend hands its session no descriptor"
        return await spawner.SERVER.start(argv, cwd=cwd, env=env)

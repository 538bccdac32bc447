"""A Trial's limits as one cap the handshake admits the relay to: memory (:mod:`.memory`) and
processes (:mod:`.pids`), started together and removed together."""

from __future__ import annotations

import attrs
from assay.plugins.sandbox_bwrap import memory, pids


@attrs.frozen
class TrialLimits:
    """Satisfies :class:`.memory.TrialCap`; only the memory cap kills."""

    memory: memory.TrialCap
    pids: pids.PidsCgroup | pids.ProcessRlimit | pids.Unlimited

    @classmethod
    def start(cls, memory_caps: memory.MemoryCaps, memory_limit: int, pids_caps: pids.PidsCaps,
              pids_limit: int) -> TrialLimits:
        cap = memory_caps.start(memory_limit)
        try:
            return cls(cap, pids_caps.start(pids_limit))
        except BaseException:
            cap.remove()
            raise

    def admit(self, pid: int) -> None:
        self.pids.admit(pid)
        self.memory.admit(pid)

    def killed(self) -> bool:
        return self.memory.killed()

    def remove(self) -> None:
        try:
            self.pids.remove()
        finally:
            self.memory.remove()

"""The pipes between the backend, bwrap and the relay for one Trial.

bwrap names the relay's pid on the report pipe (``--json-status-fd``) as soon as it has cloned
it. The backend then puts that process under the Trial's memory cap and says go on the go pipe;
only then does the relay start the command, so the command and everything it starts are capped.
Admitting the relay while its Python starts hides the cost of a cgroup v1 join, which waits out
an RCU grace period (about 12 ms here). The relay reports ``started`` and then ``exit N`` (the
command's own status; negative: killed by signal -N) on the report pipe too.
"""

from __future__ import annotations

import json
import os

import attrs
import trio
from assay.plugins.sandbox_bwrap.memory import TrialCap


@attrs.define
class Handshake:
    """Open it before the sandbox starts, :meth:`follow` it while it runs, :meth:`close` it after."""

    report_read: int
    report_bwrap: int  # bwrap closes its status fd in the child, so the relay writes to a copy
    report_relay: int
    go_read: int
    go_write: int
    lines: list[str] = attrs.field(factory=list)
    failure: str = ""
    _open: set[int] = attrs.field(factory=set)

    @classmethod
    def open(cls) -> Handshake:
        report_read, report_bwrap = os.pipe()
        go_read, go_write = os.pipe()
        handshake = cls(report_read, report_bwrap, os.dup(report_bwrap), go_read, go_write)
        handshake._open.update((report_read, report_bwrap, handshake.report_relay, go_read, go_write))
        return handshake

    @property
    def child_ends(self) -> tuple[int, int, int]:
        """The descriptors the sandbox inherits."""
        return self.report_bwrap, self.report_relay, self.go_read

    def hand_over(self) -> None:
        """Close the child's ends here once the sandbox holds them, so the reports end with it."""
        self._close(*self.child_ends)

    async def follow(self, cap: TrialCap) -> None:
        """Read reports until every writer is gone, admitting the relay to ``cap`` when named."""
        async with trio.lowlevel.FdStream(os.dup(self.report_read)) as stream:
            pending = b""
            async for chunk in stream:
                *whole, pending = (pending + chunk).split(b"\n")
                for line in whole:
                    await self._take(line.decode(errors="replace").strip(), cap)
            await self._take(pending.decode(errors="replace").strip(), cap)

    async def _take(self, line: str, cap: TrialCap) -> None:
        if not line:
            return
        self.lines.append(line)
        if line.startswith("{") and "child-pid" in (report := json.loads(line)):
            try:
                await trio.to_thread.run_sync(cap.admit, report["child-pid"])
                os.write(self.go_write, b"go")
            except ProcessLookupError:  # bwrap failed before the relay ran, and says why
                pass
            except OSError as e:  # the relay sees the pipe close without a go, and stops
                self.failure = f"assay sandbox: can't apply the memory cap: {e}"
            self._close(self.go_write)

    def close(self) -> None:
        """Close whatever is still open here."""
        self._close(*list(self._open))

    def exit_code(self) -> int | None:
        """The command's own exit status, as the relay reported it."""
        exits = [line.split()[1] for line in self.lines if line.startswith("exit ")]
        return int(exits[-1]) if exits else None

    @property
    def started(self) -> bool:
        return "started" in self.lines

    def _close(self, *fds: int) -> None:
        for fd in fds:
            if fd in self._open:
                self._open.discard(fd)
                os.close(fd)

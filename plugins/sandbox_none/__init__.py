"""The pass-through sandbox backend (``none``): runs a session bare on this machine.

For tests and for machines without bwrap. It isolates nothing (no network limit, no memory
cap), but it keeps the one promise every backend makes: when the session ends — normally, at
its timeout, or by a Stop — nothing it started is left running.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import attrs
import trio

from assay import hookimpl
from assay.proctree import ProcessTree, become_subreaper
from assay.protocols import Invocation, ProcessResult, SandboxCheck


@attrs.frozen
class NoneBackend:
    """Runs an :class:`Invocation` as a child process in a session of its own.

    ``grace`` is how long each stop signal gets before the next (then SIGKILL for the whole
    tree); ``poll`` how often the tree is re-read while the session runs, so descendants that
    leave its session are still known when it ends; ``drain`` how long output may keep flowing
    once the tree is dead. One gap remains: a process that leaves the session's own session and
    is orphaned less than ``poll`` before the leader exits normally is never seen (bwrap's PID
    namespace has no such gap).
    """

    name = "none"
    grace: float = 10.0
    poll: float = 0.5
    drain: float = 2.0
    stderr_bytes: int = 8192

    def check(self) -> SandboxCheck:
        return SandboxCheck(works=True, reason="pass-through: no isolation, no network limit, no memory cap")

    async def run(
        self, invocation: Invocation, *, timeout: float, on_line: Callable[[str], None]
    ) -> ProcessResult:
        started = trio.current_time()
        proc = await trio.lowlevel.open_process(
            list(invocation.argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=dict(invocation.env), cwd=invocation.cwd,
            start_new_session=True, preexec_fn=become_subreaper,
        )
        tree = ProcessTree(proc.pid)
        tail = bytearray()
        stdout_done, stderr_done = trio.Event(), trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_read_lines, proc.stdout, on_line, stdout_done)
                nursery.start_soon(_read_tail, proc.stderr, tail, self.stderr_bytes, stderr_done)
                nursery.start_soon(self._keep_track, tree)
                try:
                    with trio.move_on_after(timeout) as deadline:
                        await proc.wait()
                finally:
                    with trio.CancelScope(shield=True):
                        await self._end(proc, tree, invocation.stop_signals)
                        with trio.move_on_after(self.drain):
                            await stdout_done.wait()
                            await stderr_done.wait()
                        nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await proc.stdout.aclose()
                await proc.stderr.aclose()
        return ProcessResult(
            exit_code=proc.returncode, backend=self.name, duration=trio.current_time() - started,
            timed_out=deadline.cancelled_caught, stderr_tail=tail.decode(errors="replace"),
        )

    async def _keep_track(self, tree: ProcessTree) -> None:
        while True:
            tree.refresh()
            await trio.sleep(self.poll)

    async def _end(self, proc: trio.Process, tree: ProcessTree, stop_signals: tuple[int, ...]) -> None:
        """Stop a leader still running with its stop signals, then kill whatever is left."""
        for signum in stop_signals:
            if proc.returncode is not None:
                break
            tree.refresh()  # while the leader lives, its whole subtree hangs below it
            tree.signal_leader_group(signum)
            with trio.move_on_after(self.grace):
                await proc.wait()
        await tree.kill()
        await proc.wait()


async def _read_lines(stream: trio.abc.ReceiveStream, on_line: Callable[[str], None], done: trio.Event) -> None:
    """Call ``on_line`` with each line (newline stripped), the unterminated last one included."""
    pending: list[bytes] = []
    async for chunk in stream:
        *whole, rest = chunk.split(b"\n")
        if whole:
            whole[0] = b"".join([*pending, whole[0]])
            pending = []
            for raw in whole:
                on_line(_text(raw))
        pending.append(rest)
    last = b"".join(pending)
    if last:
        on_line(_text(last))
    done.set()


async def _read_tail(stream: trio.abc.ReceiveStream, tail: bytearray, keep: int, done: trio.Event) -> None:
    async for chunk in stream:
        tail += chunk
        del tail[:-keep]
    done.set()


def _text(raw: bytes) -> str:
    return raw.decode(errors="replace").removesuffix("\r")


@hookimpl
def assay_sandbox_backends() -> list[NoneBackend]:
    return [NoneBackend()]

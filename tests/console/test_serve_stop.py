"""The Console's server stops at a Ctrl-C that Python dropped before the server watched for it."""

from __future__ import annotations

import sys

import trio
from assay.console import serve
from assay.sessions import interrupts


class _DropsACtrlC:
    def __del__(self) -> None:
        raise KeyboardInterrupt  # where nothing can raise out of: Python prints "Exception ignored"


def test_a_dropped_ctrl_c_stops_the_console_as_it_starts(monkeypatch):
    """Issue 37: a Ctrl-C pressed while the Console starts (hypercorn's import, an at-fork hook)
    could be dropped by Python and the server ran on. Kept by the unraisable hook, it ends the
    server's wait for a signal at once; without it the wait would time out here."""
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # restored after the test
    monkeypatch.setattr(interrupts, "_kept_in", None)
    interrupts.keep()
    _DropsACtrlC()

    async def main() -> None:
        with trio.fail_after(5):
            await serve._interrupted()

    trio.run(main)
    assert not interrupts.take_dropped(), "the server took the dropped Ctrl-C"


def test_a_ctrl_c_nobody_dropped_is_waited_for(monkeypatch):
    """Without a dropped Ctrl-C the server waits for a real signal."""
    monkeypatch.setattr(interrupts, "_dropped", False)

    async def main() -> bool:
        with trio.move_on_after(0.2) as waited:
            await serve._interrupted()
        return waited.cancelled_caught

    assert trio.run(main)

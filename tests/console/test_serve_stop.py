"""The Console's server stops at a Ctrl-C that Python dropped before the server watched for it."""

from __future__ import annotations

import os
import signal
import sys

import pytest
import trio
from assay.console import serve
from assay.sessions import interrupts


class _DropsACtrlC:
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # raised here, where nothing can raise out of


@pytest.fixture
def kept(monkeypatch):
    """:func:`interrupts.keep` in this process for one test, Python's own handlers back after."""
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    monkeypatch.setattr(interrupts, "_noted", False)
    before = signal.getsignal(signal.SIGINT)
    interrupts.keep()
    yield
    signal.signal(signal.SIGINT, before)


def test_a_dropped_ctrl_c_stops_the_console_as_it_starts(kept):
    """Issue 37: a Ctrl-C pressed while the Console starts (hypercorn's import, an at-fork hook)
    could be dropped by Python and the server ran on. Noted before it was raised, it ends the
    server's wait for a signal at once; without that the wait would time out here."""
    _DropsACtrlC()

    async def main() -> None:
        with trio.fail_after(5):
            await serve._interrupted()

    interrupts.run_trio(main)
    assert not interrupts.take_dropped(), "the server took the dropped Ctrl-C"
    assert signal.getsignal(signal.SIGINT) is interrupts._ctrl_c, "the noting handler is back after the run"


def test_without_a_ctrl_c_the_console_waits_for_one(kept):
    async def main() -> bool:
        with trio.move_on_after(0.2) as waited:
            await serve._interrupted()
        return waited.cancelled_caught

    assert interrupts.run_trio(main)


def test_trio_protects_its_own_run_and_a_ctrl_c_inside_is_noted(kept):
    """Inside run_trio, trio's own Ctrl-C handler is installed (trio only takes over Python's
    default one): a Ctrl-C inside code trio protects waits for the next checkpoint, where it
    reaches the run as KeyboardInterrupt, and is noted as well."""
    seen = []

    @trio.lowlevel.enable_ki_protection
    def protected() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        seen.append("ran to its end")

    async def main() -> None:
        protected()
        await trio.sleep(5)

    with pytest.raises(KeyboardInterrupt):
        interrupts.run_trio(main)
    assert seen == ["ran to its end"]
    assert interrupts.take_dropped()
    assert signal.getsignal(signal.SIGINT) is interrupts._ctrl_c

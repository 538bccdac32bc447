"""A Ctrl-C is never lost, even where Python drops it.

Python raises a Ctrl-C as KeyboardInterrupt wherever the main thread happens to be, and in
places nothing can raise out of, or that clear any error, it is gone without a word: an at-fork
hook as a child process starts, a ``__del__``, importlib's clean-up, a C extension's module
set-up (numpy's random module, imported as the Verdict's code loads, swallowed about one Ctrl-C
in twenty at plan time). So from the moment a command begins (:func:`keep`), a Ctrl-C is noted
before it is raised, and whatever takes Ctrl-C over as a Stop (the Experiment's run, the Scoring
run, the Console's server) asks :func:`next_stop`, which answers at once for a Ctrl-C that came
before it watched and is still unanswered. Every ``trio.run`` goes through :func:`run_trio`, so
trio's own Ctrl-C protection inside a run is kept and notes it too.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from types import FrameType
from typing import Any, TypeVar

from assay import startup

T = TypeVar("T")

_noted = False  # a Ctrl-C came; were it taken, the process would be ending


def _note() -> None:
    global _noted
    _noted = True


def _ctrl_c(signum: int, frame: FrameType | None) -> None:
    _note()
    raise KeyboardInterrupt


def keep() -> None:
    """From now on note every Ctrl-C before Python raises it, and print none it drops (call it on
    the main thread, where Ctrl-C is not ignored)."""
    signal.signal(signal.SIGINT, _ctrl_c)
    previous = sys.unraisablehook
    if getattr(previous, "assay_keeps_ctrl_c", False):
        return
    mine = os.getpid()

    def hook(unraisable: Any) -> None:
        if not (issubclass(unraisable.exc_type, KeyboardInterrupt) and os.getpid() == mine):
            previous(unraisable)

    hook.assay_keeps_ctrl_c = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def take_dropped() -> bool:
    """Whether a Ctrl-C came that nothing took (asking takes it)."""
    global _noted
    noted, _noted = _noted, False
    return noted


async def next_stop(signals: AsyncIterator[int]) -> str:
    """Wait for the next Stop from ``signals`` (a trio signal receiver, already open), or none if a
    Ctrl-C came before it opened and was dropped; what it was, for the Command log."""
    if take_dropped():
        return "SIGINT, before the run watched for it"
    return signal.Signals(await anext(aiter(signals))).name


def run_trio(async_fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run``, with trio's own Ctrl-C handling inside (a KeyboardInterrupt at a checkpoint
    where trio's internals are protected), which it installs only over Python's default handler;
    a Ctrl-C in the run is noted as well, and :func:`keep`'s handler is back once it ends. The
    command's work begins here, so start-up's collector setting ends (:mod:`assay.startup`)."""
    import trio

    startup.settled()

    if signal.getsignal(signal.SIGINT) is not _ctrl_c:  # before a command begins, or Ctrl-C ignored
        return trio.run(async_fn, *args)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # off the main thread, where no signal handler runs
        return trio.run(async_fn, *args)
    try:
        return trio.run(_noting, async_fn, args)
    finally:
        signal.signal(signal.SIGINT, _ctrl_c)


async def _noting(async_fn: Callable[..., Awaitable[T]], args: tuple[Any, ...]) -> T:
    trios = signal.getsignal(signal.SIGINT)

    def noting(signum: int, frame: FrameType | None) -> None:
        _note()
        trios(signum, frame)  # type: ignore[operator]

    signal.signal(signal.SIGINT, noting)
    try:
        return await async_fn(*args)
    finally:  # trio gives Python's handler back only over its own
        if signal.getsignal(signal.SIGINT) is noting:
            signal.signal(signal.SIGINT, trios)

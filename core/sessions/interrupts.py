"""A Ctrl-C is never lost, even where Python drops it.

Python raises a Ctrl-C as KeyboardInterrupt wherever the main thread happens to be. Where that
is a place nothing can raise out of (an at-fork hook as a child process starts, a ``__del__``,
importlib's clean-up of an import), Python prints "Exception ignored in: …" and carries on: the
Ctrl-C is gone and a long run goes on as if it never came. :func:`keep` installs an unraisable
hook that remembers such a Ctrl-C instead; each place that takes Ctrl-C over as a Stop (the
Experiment's run, the Scoring run, the Console's server) asks :func:`take_dropped` once it
watches for signals itself, and stops as if the Ctrl-C had just arrived.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

_kept_in: int | None = None  # the process whose hook this is (a forked child has none of its own)
_dropped = False


def keep() -> None:
    """From now on remember, rather than print, a Ctrl-C that Python drops in this process."""
    global _kept_in
    if _kept_in == os.getpid():
        return
    _kept_in = os.getpid()
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        global _dropped
        if issubclass(unraisable.exc_type, KeyboardInterrupt) and os.getpid() == _kept_in:
            _dropped = True
            return
        previous(unraisable)

    sys.unraisablehook = hook


def take_dropped() -> bool:
    """Whether a Ctrl-C was dropped since the last ask (asking takes it)."""
    global _dropped
    dropped, _dropped = _dropped, False
    return dropped


async def next_stop(signals: AsyncIterator[int]) -> str:
    """Wait for the next Stop from ``signals`` (a trio signal receiver, already open), or none if
    Python dropped a Ctrl-C before it opened; what it was, for the Command log."""
    if take_dropped():
        return "SIGINT, before the run watched for it"
    return signal.Signals(await anext(aiter(signals))).name

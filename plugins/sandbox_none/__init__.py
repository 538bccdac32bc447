"""The pass-through sandbox backend (``none``): runs a session bare on this machine.

For tests and for machines without bwrap. It isolates nothing (no network limit, no memory
cap), but it keeps the one promise every backend makes: when the session ends — normally, at
its timeout, or by a Stop — nothing it started is left running (:mod:`assay.sessions.supervise`, and
``reaper.py``, which adopts and kills what the session orphans).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay import hookimpl

if TYPE_CHECKING:
    from assay.plugins.sandbox_none.backend import NoneBackend


@hookimpl
def assay_sandbox_backends() -> list[NoneBackend]:
    from assay.plugins.sandbox_none.backend import NoneBackend  # trio: only once a backend is wanted

    return [NoneBackend()]

"""The bwrap sandbox backend (``bwrap``): the default wherever bwrap works (docs/sandbox.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay import hookimpl

if TYPE_CHECKING:
    from assay.plugins.sandbox_bwrap.backend import BwrapBackend


@hookimpl
def assay_sandbox_backends() -> list[BwrapBackend]:
    from assay.plugins.sandbox_bwrap.backend import BwrapBackend  # trio: only once a backend is wanted

    return [BwrapBackend()]

"""The bwrap sandbox backend (``bwrap``): the default wherever bwrap works (docs/sandbox.md)."""

from __future__ import annotations

from assay import hookimpl
from assay.plugins.sandbox_bwrap.backend import BwrapBackend


@hookimpl
def assay_sandbox_backends() -> list[BwrapBackend]:
    return [BwrapBackend()]

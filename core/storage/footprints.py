"""Each Harness's measured footprint: the most memory one of its sessions held, as ``assay
harnesses check`` last measured it (``ASSAY_HOME/footprints.json``). The bwrap backend's default
memory cap is set from it (docs/sandbox.md, "Memory")."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import ClassVar

import attrs
from assay.storage import formats
from assay.storage.home import AssayHome

FILE = "footprints.json"


@attrs.frozen
class Footprint:
    peak_bytes: int  # the largest peak of its check sessions
    version: str | None
    measured_at: dt.datetime


@attrs.frozen
class Footprints:
    FORMAT: ClassVar[int] = 1

    harnesses: Mapping[str, Footprint] = attrs.field(factory=dict)


def read(home: AssayHome) -> dict[str, Footprint]:
    """The footprints measured so far, by Harness (none when never measured)."""
    path = home.root / FILE
    return dict(formats.read(path, Footprints).harnesses) if path.exists() else {}


def record(home: AssayHome, harness: str, footprint: Footprint) -> None:
    """Keep ``harness``'s newest footprint beside the others'."""
    formats.write(home.root / FILE, Footprints({**read(home), harness: footprint}))

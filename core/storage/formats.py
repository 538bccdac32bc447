"""The one cattrs converter that reads and writes every on-disk JSON format.

Each record class names its ``FORMAT`` number; files carry it as ``"format"``. A reader
refuses a newer format than it knows, naming the file and both numbers, and upgrades an older
one through the class's ``UPGRADES`` ladder (a dict → dict step per version) before structuring.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import cattrs
from assay.storage import files
from assay.storage.records import Outcome, VoidCause
from cattrs.gen import make_dict_structure_fn

T = TypeVar("T")


class FormatError(ValueError):
    """A file that this assay can't read; the message names the file."""


def _make_converter() -> cattrs.Converter:
    c = cattrs.Converter(forbid_extra_keys=True)
    c.register_unstructure_hook(dt.datetime, lambda d: d.isoformat())
    c.register_structure_hook(dt.datetime, lambda v, _: dt.datetime.fromisoformat(v))
    c.register_unstructure_hook(Path, str)
    c.register_structure_hook(Path, lambda v, _: Path(v))
    c.register_unstructure_hook(enum.Enum, lambda e: e.value)
    for str_enum in (Outcome, VoidCause):  # str comes before Enum in their MRO: name them
        c.register_unstructure_hook(str_enum, lambda e: e.value)
    # Class-level constants (FORMAT, UPGRADES) are ClassVars, so attrs never sees them as fields.
    c.register_structure_hook_factory(
        attrs.has, lambda cls: make_dict_structure_fn(cls, c, _cattrs_forbid_extra_keys=True)
    )
    return c


converter = _make_converter()


def unstructure(record: Any) -> dict[str, Any]:
    """The record as a JSON-ready dict, with its ``format`` number first."""
    body = converter.unstructure(record)
    fmt = getattr(type(record), "FORMAT", None)
    return body if fmt is None else {"format": fmt, **body}


def structure(data: Any, cls: type[T], *, source: str) -> T:
    """Build ``cls`` from a dict read from ``source`` (a path or a name for messages)."""
    if not isinstance(data, dict):
        raise FormatError(f"{source}: expected a JSON object, got {type(data).__name__}")
    data = dict(data)
    known = getattr(cls, "FORMAT", None)
    if known is not None:
        found = data.pop("format", None)
        if not isinstance(found, int):
            raise FormatError(f"{source}: missing or invalid 'format' number")
        if found > known:
            raise FormatError(
                f"{source}: format {found} is newer than this assay reads (format {known}); "
                "upgrade assay to read it"
            )
        upgrades: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = getattr(cls, "UPGRADES", {})
        for version in range(found, known):
            if version not in upgrades:
                raise FormatError(f"{source}: format {found} is too old to read (now {known})")
            data = upgrades[version](data)
    try:
        return converter.structure(data, cls)
    except Exception as e:  # cattrs groups every field error; show them as one line
        raise FormatError(f"{source}: {'; '.join(cattrs.transform_error(e))}") from None


def write(path: Path, record: Any) -> None:
    """Write a record atomically."""
    files.write_json(path, unstructure(record))


def read(path: Path, cls: type[T]) -> T:
    """Read a record, refusing unknown formats and malformed content with the file's name."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as e:
        raise FormatError(f"{path}: not readable JSON ({e})") from None
    return structure(data, cls, source=str(path))

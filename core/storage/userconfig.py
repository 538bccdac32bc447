"""The User config (``ASSAY_HOME/config.toml``): the grading settings a person keeps across runs.

``[grading.families]`` adds model families for the family rule (:mod:`assay.storage.families`),
``FAMILY = ["glob", ...]``; ``[grading] seats = ["HARNESS:MODEL", ...]`` are the standing model
Grader seats a review suite takes when no ``--model-grader`` is given. A malformed entry is
refused with the file and the field.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

import attrs

CONFIG = "config.toml"


class UserConfigError(ValueError):
    """The User config can't be used (the message names the file and the field)."""


@attrs.frozen
class GradingConfig:
    families: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    seats: tuple[str, ...] = ()


def _strings(value: object, path: Path, field: str, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise UserConfigError(f"{path}: {field} must be a list of {what}")
    return tuple(value)


def grading_config(root: Path | None) -> GradingConfig:
    """The ``[grading]`` table of the User config under ``root`` (empty when there is none)."""
    path = root / CONFIG if root else None
    if path is None or not path.is_file():
        return GradingConfig()
    try:
        grading = tomllib.loads(path.read_text()).get("grading", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as e:
        raise UserConfigError(f"{path}: can't be read ({e})") from None
    if not isinstance(grading, dict):
        raise UserConfigError(f"{path}: grading must be a table")
    table = grading.get("families", {})
    if not isinstance(table, dict):
        raise UserConfigError(f'{path}: grading.families must be a table of FAMILY = ["glob", ...]')
    families = {name: _strings(v, path, f"grading.families.{name}", "glob patterns") for name, v in table.items()}
    seats = _strings(grading.get("seats", []), path, "grading.seats", '"HARNESS:MODEL" seats')
    for i, seat in enumerate(seats):
        harness, _, model = seat.partition(":")
        if not harness.strip() or not model.strip():
            raise UserConfigError(f"{path}: grading.seats[{i}] '{seat}' is not HARNESS:MODEL")
    return GradingConfig(families, seats)

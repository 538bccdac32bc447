"""The User config (``ASSAY_HOME/config.toml``): the grading settings a person keeps across runs.

``[executor]`` says where Trials run (``name = "ray"``, ``address = "HOST:PORT"``: docs/distributed.md);
``[grading.families]`` adds model families for the family rule (:mod:`assay.storage.families`),
``FAMILY = ["glob", ...]``; ``[grading] seats = ["HARNESS:MODEL", ...]`` are the standing model
Grader seats a review suite takes when no ``--model-grader`` is given; ``[release] tag_pattern``
names the Factory's release tags (docs/release.md); ``[scoring]`` sets up the Scoring run
(docs/scoring.md). A plugin reads its own tables (``[grading.aliases]``). A missing file is every
default; a malformed entry is refused with the file and the field.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

import attrs

CONFIG = "config.toml"
DEFAULT_TAG_PATTERN = "v*"


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


def _table(root: Path | None, name: str) -> tuple[Path, dict]:
    """The User config's path and its ``[name]`` table (empty when there is none)."""
    path = (root or Path()) / CONFIG
    if root is None or not path.is_file():
        return path, {}
    try:
        table = tomllib.loads(path.read_text()).get(name, {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as e:
        raise UserConfigError(f"{path}: can't be read ({e})") from None
    if not isinstance(table, dict):
        raise UserConfigError(f"{path}: {name} must be a table")
    return path, table


def release_tag_pattern(root: Path | None) -> str:
    """``[release] tag_pattern``: the glob (git's, as ``git describe --match`` reads it) that names
    the Factory's release tags; ``v*`` by default."""
    path, table = _table(root, "release")
    pattern = table.get("tag_pattern", DEFAULT_TAG_PATTERN)
    if not isinstance(pattern, str) or not pattern.strip():
        raise UserConfigError(f'{path}: release.tag_pattern: expected a non-empty glob such as "v*"')
    return pattern


def _seats(value: object, path: Path, field: str) -> tuple[str, ...]:
    seats = _strings(value, path, field, '"HARNESS:MODEL" seats')
    for i, seat in enumerate(seats):
        harness, _, model = seat.partition(":")
        if not harness.strip() or not model.strip():
            raise UserConfigError(f"{path}: {field}[{i}] '{seat}' is not HARNESS:MODEL")
    return seats


def grading_config(root: Path | None) -> GradingConfig:
    """The ``[grading]`` table of the User config under ``root`` (empty when there is none)."""
    path, grading = _table(root, "grading")
    table = grading.get("families", {})
    if not isinstance(table, dict):
        raise UserConfigError(f'{path}: grading.families must be a table of FAMILY = ["glob", ...]')
    families = {name: _strings(v, path, f"grading.families.{name}", "glob patterns") for name, v in table.items()}
    return GradingConfig(families, _seats(grading.get("seats", []), path, "grading.seats"))


SAMPLE_SIZE, SECURITY_LABEL, BUG_LABEL, REVIEW_SUITE = 10, "security-fix", "bug", "code-review"


@attrs.frozen
class ScoringConfig:
    """``[scoring]``: whose pull requests the Scoring run samples, how many, and its Grader seats
    (the first, or the next whose Model is from another family than the one that built the PR)."""

    owners: tuple[str, ...] = ()
    size: int = SAMPLE_SIZE
    seats: tuple[str, ...] = ()
    security_label: str = SECURITY_LABEL
    bug_label: str = BUG_LABEL  # the issues Bug origins trace
    review_suite: str = REVIEW_SUITE  # where a confirmed Bug origin proposes its Eval task


def scoring_config(root: Path | None) -> ScoringConfig:
    """The ``[scoring]`` table of the User config under ``root`` (defaults when there is none)."""
    path, table = _table(root, "scoring")
    owners = _strings(table.get("owners", []), path, "scoring.owners", "GitHub owners") if "owners" in table else ()
    size = table.get("size", SAMPLE_SIZE)
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= 1000:
        raise UserConfigError(f"{path}: scoring.size must be a whole number from 1 to 1000")
    names = {}
    for field, default in (("security_label", SECURITY_LABEL), ("bug_label", BUG_LABEL), ("review_suite", REVIEW_SUITE)):
        value = table.get(field, default)
        if not isinstance(value, str) or not value.strip():
            raise UserConfigError(f"{path}: scoring.{field} must be a non-empty name")
        names[field] = value
    return ScoringConfig(owners, size, _seats(table.get("seats", []), path, "scoring.seats"), **names)


@attrs.frozen
class ExecutorConfig:
    """``[executor]``: the executor Experiments use when no ``--executor`` is given, and its address."""

    name: str | None = None
    address: str | None = None


def executor_config(root: Path | None) -> ExecutorConfig:
    """The ``[executor]`` table of the User config under ``root`` (nothing set when there is none)."""
    path, table = _table(root, "executor")
    values = {}
    for field in ("name", "address"):
        value = table.get(field)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise UserConfigError(f"{path}: executor.{field} must be a non-empty string")
        values[field] = value
    unknown = sorted(set(table) - {"name", "address"})
    if unknown:
        raise UserConfigError(f"{path}: executor.{unknown[0]}: unknown field (known: name, address)")
    return ExecutorConfig(**values)

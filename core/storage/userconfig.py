"""The User config, ``$ASSAY_HOME/config.toml``: settings that belong to the person, not to a Factory.

Tables read by the core live here (``[release]``); a plugin reads its own (``[grading.aliases]``,
docs/grading.md). A missing file is every default; a malformed one is refused naming the file
and the field.
"""

from __future__ import annotations

import tomllib
from typing import Any

from assay.storage.home import AssayHome

DEFAULT_TAG_PATTERN = "v*"


class ConfigError(ValueError):
    """The User config can't be used; the message names the file and the field."""


def read(home: AssayHome) -> dict[str, Any]:
    """The whole User config as TOML data ({} when there is none)."""
    path = home.user_config
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None


def release_tag_pattern(home: AssayHome) -> str:
    """``[release] tag_pattern``: the glob (git's, as ``git describe --match`` reads it) that
    names the Factory's release tags; ``v*`` by default."""
    table = read(home).get("release", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{home.user_config}: release: expected a table ([release])")
    pattern = table.get("tag_pattern", DEFAULT_TAG_PATTERN)
    if not isinstance(pattern, str) or not pattern.strip():
        raise ConfigError(f"{home.user_config}: release.tag_pattern: expected a non-empty glob such as \"v*\"")
    return pattern

"""Application settings: built-in defaults, overridden by the user's file."""

import copy
import json

DEFAULTS = {
    "database": {"host": "localhost", "port": 5432, "options": {"timeout": 5}},
    "log_level": "info",
    "plugins": ["core"],
}


def merge(defaults, overrides):
    """The settings of `overrides` on top of `defaults`, section by section at any depth.

    Builds a new dict (deep-copied values) so neither input, and above all never DEFAULTS,
    is changed by a merge.
    """
    merged = copy.deepcopy(defaults)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def load(path):
    """The settings: DEFAULTS, overridden by the JSON file at `path`."""
    with open(path, encoding="utf-8") as f:
        return merge(DEFAULTS, json.load(f))

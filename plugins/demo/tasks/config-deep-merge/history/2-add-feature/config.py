"""Application settings: built-in defaults, overridden by the user's file."""

import json

DEFAULTS = {
    "database": {"host": "localhost", "port": 5432, "options": {"timeout": 5}},
    "log_level": "info",
    "plugins": ["core"],
}


def merge(defaults, overrides):
    """The settings of `overrides` on top of `defaults`."""
    return {**defaults, **overrides}


def load(path):
    """The settings: DEFAULTS, overridden by the JSON file at `path`."""
    with open(path, encoding="utf-8") as f:
        return merge(DEFAULTS, json.load(f))

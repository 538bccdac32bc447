"""Application settings: built-in defaults, overridden by the user's file."""

DEFAULTS = {
    "database": {"host": "localhost", "port": 5432, "options": {"timeout": 5}},
    "log_level": "info",
    "plugins": ["core"],
}


def merge(defaults, overrides):
    """The settings of `overrides` on top of `defaults`."""
    return {**defaults, **overrides}

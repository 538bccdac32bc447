"""Release versions: MAJOR.MINOR.PATCH, with an optional leading v."""

import re

VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def parse_version(text):
    """(major, minor, patch) from 'v1.2.3' or '1.2.3'; ValueError for anything else.

    fullmatch, not match: the whole string must be the version (match stops early, and a
    '$' anchor would still let a trailing newline through).
    """
    match = VERSION.fullmatch(text)
    if not match:
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(part) for part in match.groups())


def newest(versions):
    """The highest version of several, as written."""
    return max(versions, key=parse_version)

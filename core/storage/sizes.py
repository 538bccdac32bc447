"""Sizes people write (``512M``, ``8G``) and the per-Trial limits set by environment variables."""

from __future__ import annotations

import os
import re

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes from ``"512M"``, ``"8G"``, ``"1.5G"`` or a plain number (binary units)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE | re.ASCII)
    if not match or float(match[1]) <= 0:
        raise ValueError(f"{text!r} is not a memory size (e.g. 512M, 8G)")
    return int(float(match[1]) * _UNITS[match[2].upper()])


def size_from_env(name: str, default: int) -> int:
    """``$NAME`` as a size if set, else ``default``; a ValueError names the variable."""
    raw = os.environ.get(name, "").strip()
    try:
        return parse_size(raw) if raw else default
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None

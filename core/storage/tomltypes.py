"""Type-checking a TOML manifest's fields against an attrs class, strictly, by cattrs structuring.

cattrs' default hooks convert (``str(["process"])``, ``list("abc")``); a manifest must instead say
which field of which file has the wrong type. :func:`type_problems` structures a table with hooks
that only accept TOML's own types, and turns every error into ``(field, message)``, the field
spelled as the manifest spells it (``inputs.issue``, ``criteria.findings[0]``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any, get_origin

import attrs
import cattrs
from cattrs.cols import list_structure_factory, mapping_structure_factory
from cattrs.v import format_exception

_NAMES = {str: "a string", bool: "true or false", int: "a whole number", float: "a number"}


class _Mismatch(TypeError):
    """A value of the wrong TOML type; the message says what was expected and what was found."""


def toml_type(value: Any) -> str:
    """How TOML names the type of a parsed value."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, (dt.date, dt.time)):
        return "a date or time"
    return type(value).__name__


def _scalar(kind: type) -> Any:
    def hook(value: Any, _: Any) -> Any:
        wrong = isinstance(value, bool) != (kind is bool) or not isinstance(value, kind)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if wrong:
            raise _Mismatch(f"expected {_NAMES[kind]}, got {toml_type(value)}")
        return value
    return hook


def _converter() -> cattrs.Converter:
    c = cattrs.Converter(forbid_extra_keys=True)
    for kind in _NAMES:
        c.register_structure_hook(kind, _scalar(kind))
    c.register_structure_hook(Any, lambda value, _: value)

    def checked(kind: type, name: str, make: Any) -> Any:
        """A hook factory: cattrs' own hook for the type, once the value is a ``kind`` at all."""
        def factory(cls: Any) -> Any:
            inner = make(cls)

            def hook(value: Any, t: Any) -> Any:
                if not isinstance(value, kind):
                    raise _Mismatch(f"expected {name}, got {toml_type(value)}")
                return inner(value, t)
            return hook
        return factory

    c.register_structure_hook_factory(lambda t: get_origin(t) in (list, tuple),
                                      checked(list, "an array", lambda cls: list_structure_factory(cls, c)))
    c.register_structure_hook_factory(lambda t: get_origin(t) in (dict, Mapping),
                                      checked(dict, "a table", lambda cls: mapping_structure_factory(cls, c)))
    c.register_structure_hook_factory(attrs.has, checked(dict, "a table", lambda cls: cattrs.gen.make_dict_structure_fn(
        cls, c, _cattrs_forbid_extra_keys=True)))
    return c


_CONVERTER = _converter()


def _message(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, _Mismatch):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required"
    return format_exception(exc, type_)


def _field(path: str, prefix: str) -> str:
    """cattrs' ``$.inputs['issue'][0]`` as a manifest spells it: ``inputs.issue[0]``."""
    spelled = re.sub(r"\['([^']*)'\]", r".\1", path.removeprefix("$").lstrip("."))
    return prefix + spelled


def type_problems(data: Mapping[str, Any], cls: type, prefix: str = "") -> list[tuple[str, str]]:
    """Every field of ``data`` whose type ``cls`` refuses, as ``(field, message)``; [] when all fit.
    Only the fields ``cls`` names are checked (unknown ones are the caller's to report)."""
    known = {f.name for f in attrs.fields(cls)}
    try:
        _CONVERTER.structure({k: v for k, v in data.items() if k in known}, cls)
    except Exception as e:  # cattrs groups every field's error
        out = []
        for line in cattrs.transform_error(e, format_exception=_message):
            message, _, path = line.rpartition(" @ ")
            out.append((_field(path, prefix) or "(file)", message))
        return out
    return []


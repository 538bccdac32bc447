"""Parameters that need no conversion don't load pydantic (issue 39).

Since 0.29 typer converts each parameter's value with a pydantic ``TypeAdapter``, built the first
time a value passes, even ``None`` (an option not given) and a value that stays itself: every
command with a parameter, and every sub-command (the root's unused ``--help``), paid ~30-100 ms
to import pydantic. :func:`install` defers that: ``None`` becomes what typer makes of it without an
adapter; a value already of its parameter's plain type (a ``str`` from the command line, an ``int``
or ``float`` default within its bounds, or a list of them, with no parser or file to apply) passes
as it is, as typer's adapter passes it; a number typed in its plainest spelling (``3``, ``-2``,
``0.5``: what ``--trials-per-task 1`` or ``--timeout 8`` give) is made that number, as pydantic
makes it, and passes the same way; a path goes through typer's own path checks, made a path
first (what pydantic does with a ``str``); any other value is converted by typer's own adapter,
built then.
On a typer without this machinery it does nothing.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

_installed = False
# Numbers spelt the one way pydantic's lax mode and Python agree on; any other spelling (spaces,
# "+", "1_000", "1e3", leading zeros, a fraction for an int) goes to typer's own adapter, which
# converts or refuses it with typer's words.
_PLAIN_NUMBER = {int: re.compile(r"-?(0|[1-9][0-9]{0,17})"), float: re.compile(r"-?(0|[1-9][0-9]{0,17})(\.[0-9]{1,17})?")}


def install() -> None:
    """Wrap typer's lazily built runtime conversion once per process (a no-op before typer 0.29)."""
    global _installed
    if _installed:
        return
    _installed = True
    try:
        from typer import _coercion, _param_types
        from typer.core import _TyperParameter
    except ImportError:
        return
    built = getattr(_TyperParameter, "get_runtime_param", None)
    if built is None or not hasattr(_coercion, "build_runtime_param") or not hasattr(_param_types, "coerce_cli_path"):
        return

    class Deferred:
        """Typer's conversion of one parameter, built on the first value that needs it."""

        def __init__(self, param: Any) -> None:
            self.param = param
            self.real: Any = None
            descriptor = param.type_descriptor
            self.info = info = descriptor.parameter_info
            own = descriptor.file_annotation is None and getattr(info, "parser", None) is None
            annotation = descriptor.annotation
            self.many = typing.get_origin(annotation) is list
            item = typing.get_args(annotation)[0] if self.many and len(typing.get_args(annotation)) == 1 else annotation
            bounded = info.min is not None or info.max is not None
            self.plain = item if own and item in (str, int, float) and not (bounded and info.clamp) else None
            self.path = annotation if (own and not self.many and isinstance(annotation, type)
                                       and issubclass(annotation, Path) and info.path_type is None) else None

        def typed(self, value: Any) -> Any:
            """``value`` as the number a plain spelling of it means, else ``value`` itself."""
            if type(value) is str and self.plain in _PLAIN_NUMBER and _PLAIN_NUMBER[self.plain].fullmatch(value):
                return self.plain(value)
            return value

        def as_is(self, value: Any) -> bool:
            """Whether typer's adapter gives ``value`` back as it is: of the plain type, within its bounds."""
            return type(value) is self.plain and (self.plain is str or (
                (self.info.min is None or value >= self.info.min) and (self.info.max is None or value <= self.info.max)))

        def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
            many = param.multiple or param.nargs == -1
            if self.real is None:
                if value is None:
                    return () if many else None
                if self.plain is not None and many == self.many:
                    if not many and self.as_is(typed := self.typed(value)):
                        return typed
                    if many and type(value) in (list, tuple):
                        items = [self.typed(v) for v in value]
                        if all(self.as_is(v) for v in items):
                            return items
                if self.path is not None and not many and isinstance(value, (str, Path)):
                    # typer's path adapter is this call on the value made a path (which is pydantic's str -> Path)
                    path = value if isinstance(value, self.path) else self.path(value)
                    return _param_types.coerce_cli_path(path, self.info, path_type=self.path, param=param, ctx=ctx)
                self.real = _coercion.build_runtime_param(self.param.type_descriptor)
            return self.real.coerce(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            self._runtime_param = Deferred(self)
        return self._runtime_param

    _TyperParameter.get_runtime_param = get_runtime_param

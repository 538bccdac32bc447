"""Parameters that need no conversion don't load pydantic (issue 39).

Since 0.29 typer converts each parameter's value with a pydantic ``TypeAdapter``, built the first
time a value passes, even ``None`` (an option not given) and a value that stays itself: every
command with a parameter, and every sub-command (the root's unused ``--help``), paid ~30-100 ms
to import pydantic. :func:`install` defers that: ``None`` becomes what typer makes of it without an
adapter; a value already of its parameter's plain type (a ``str`` from the command line, an ``int``
or ``float`` default, or a list of them, with no bounds, parser or file to apply) passes as it is, as typer's adapter
passes it; any other value is converted by typer's own adapter, built then.
On a typer without this machinery it does nothing.
"""

from __future__ import annotations

import typing
from typing import Any

_installed = False


def install() -> None:
    """Wrap typer's lazily built runtime conversion once per process (a no-op before typer 0.29)."""
    global _installed
    if _installed:
        return
    _installed = True
    try:
        from typer import _coercion
        from typer.core import _TyperParameter
    except ImportError:
        return
    built = getattr(_TyperParameter, "get_runtime_param", None)
    if built is None or not hasattr(_coercion, "build_runtime_param"):
        return

    class Deferred:
        """Typer's conversion of one parameter, built on the first value that needs it."""

        def __init__(self, param: Any) -> None:
            self.param = param
            self.real: Any = None
            descriptor = param.type_descriptor
            info = descriptor.parameter_info
            unconstrained = (descriptor.file_annotation is None and getattr(info, "parser", None) is None
                             and info.min is None and info.max is None)
            annotation = descriptor.annotation
            self.many = typing.get_origin(annotation) is list
            item = typing.get_args(annotation)[0] if self.many and len(typing.get_args(annotation)) == 1 else annotation
            self.plain = item if unconstrained and item in (str, int, float) else None

        def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.real is None:
                many = param.multiple or param.nargs == -1
                if value is None:
                    return () if many else None
                if self.plain is not None and many == self.many:
                    if not many and type(value) is self.plain:
                        return value
                    if many and type(value) in (list, tuple) and all(type(v) is self.plain for v in value):
                        return list(value)
                self.real = _coercion.build_runtime_param(self.param.type_descriptor)
            return self.real.coerce(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            self._runtime_param = Deferred(self)
        return self._runtime_param

    _TyperParameter.get_runtime_param = get_runtime_param

"""How commands speak: one-line errors with an exit code, JSON for scripts, tables for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import typer


class UserError(Exception):
    """Bad input: printed as one line ``assay: error: …`` with exit code ``code``."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = 2) -> NoReturn:
    raise UserError(message, code)


def print_error(message: str) -> None:
    """``assay: error: …`` on stderr, one line per line of ``message`` (several problems, several lines)."""
    for line in message.splitlines() or [""]:
        print(f"assay: error: {line}", file=sys.stderr)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, empty: str = "(none)") -> None:
    """A plain aligned table (rich's tables wrap badly in logs and pipes)."""
    if not rows:
        typer.echo(empty)
        return
    cells = [[("" if c is None else str(c)) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    typer.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    for r in cells:
        typer.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text.")

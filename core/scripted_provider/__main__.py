"""``python -m assay.scripted_provider SCRIPT --log FILE [--port N | --unix PATH]``: serve until stopped.

For trying a CLI against a script by hand; tests and ``assay harnesses check`` start the
provider in-process instead.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated, Optional

import typer
from assay.scripted_provider.script import load_script
from assay.scripted_provider.server import ScriptedProvider
from assay.storage.formats import FormatError


def serve(
    script: Annotated[Path, typer.Argument(help="The script of turns (.toml or .json).")],
    log: Annotated[Path, typer.Option(help="Where to log every request (JSON lines, appended).")],
    host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The TCP port (0: any free one).")] = 0,
    unix: Annotated[Optional[Path], typer.Option(help="Listen on this Unix socket instead of TCP.")] = None,
) -> None:
    """Play SCRIPT to Claude Code (Anthropic Messages API) and Codex (OpenAI Responses API) until Ctrl-C."""
    try:
        provider = ScriptedProvider(load_script(script), log).start(host, port, unix=unix)
    except (FormatError, OSError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    typer.echo(f"scripted provider on {unix or provider.url}, logging to {log}")
    stop.wait()
    provider.stop()


if __name__ == "__main__":
    typer.run(serve)

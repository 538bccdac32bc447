"""Running the Console: Hypercorn's trio worker serving the app until Ctrl-C or SIGTERM."""

from __future__ import annotations

import functools
import signal

import trio
from assay.console.app import LOOPBACK, make_app
from assay.hooks.loaded import Plugins
from assay.sessions import interrupts
from assay.storage.home import AssayHome


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


async def _interrupted() -> None:
    """Returns at the first SIGINT or SIGTERM: Hypercorn then shuts down gracefully (open
    connections get its graceful timeout), rather than a KeyboardInterrupt raised wherever the
    server happened to be, which could leave a browser's kept-alive connection holding it up."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        await interrupts.next_stop(received)


def serve(home: AssayHome, plugins: Plugins, host: str, port: int, token: str | None) -> None:
    """Serve until interrupted (hypercorn is imported here: only ``assay console`` needs it)."""
    from hypercorn.config import Config
    from hypercorn.trio import serve as hypercorn_serve

    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = "-"
    app = make_app(home, plugins, token=token, loopback=is_loopback(host))
    try:
        interrupts.run_trio(functools.partial(hypercorn_serve, app, config, mode="asgi", shutdown_trigger=_interrupted))
    except BaseExceptionGroup as group:  # trio's nurseries wrap a failed bind
        failed = group.subgroup(OSError)
        while isinstance(failed, BaseExceptionGroup):
            failed = failed.exceptions[0]
        if failed is None:
            raise
        raise failed from None

"""``assay console``: the web Console over this ASSAY_HOME (docs/console.md)."""

from __future__ import annotations

import secrets
import socket

import typer
from assay.cli import output
from assay.hooks.loaded import Plugins


def register(app: typer.Typer, plugins: Plugins) -> None:
    @app.command("console")
    def console(
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback unless you say otherwise)."),
        port: int = typer.Option(8700, "--port", min=1, max=65535, help="Port to listen on."),
    ) -> None:
        """Serve the Console: Experiments live, Scores and Bug origins, in a browser."""
        from assay.console.serve import is_loopback, serve
        from assay.storage.home import AssayHome

        _can_listen(host, port)  # a port in use is said first, before any line that reads as started
        token = None
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        if not is_loopback(host):
            token = secrets.token_urlsafe(24)
            output.say(f"assay: warning: the Console listens on {host}, beyond this machine: every request must "
                       "carry the token below, and anyone who has it can read your Experiments and act on them",
                       err=True)
        url = f"http://{shown if ':' not in shown else f'[{shown}]'}:{port}/" + (f"?token={token}" if token else "")
        output.say(f"assay Console on {url} (Ctrl-C to stop)")
        try:
            serve(AssayHome.from_env(), plugins, host, port, token)
        except OSError as e:
            output.fail(f"--host {host} --port {port}: can't listen there ({e.strerror or e})")
        except KeyboardInterrupt:  # Ctrl-C before the server took the signals over
            pass
        output.say("Console stopped.")


def _can_listen(host: str, port: int) -> None:
    """Refuse, in one line, an address the Console can't listen on (its port taken, say)."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.create_server((host, port), family=family):
            pass
    except OSError as e:
        output.fail(f"--host {host} --port {port}: can't listen there ({e.strerror or e})")

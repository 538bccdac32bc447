"""``python -m assay`` and the ``assay`` script: the CLI, with Ctrl-C taken from the first moment.

Importing the CLI takes a moment (typer, pluggy, the plugins' entry points, the command's module);
a Ctrl-C then must end assay in one line, never a traceback (docs/experiments.md). Nothing has
started yet, so until the command itself begins (the root callback in :mod:`assay.cli`) a Ctrl-C
ends the process at once: raised as KeyboardInterrupt inside an import, it could land in
importlib's own clean-up, where Python only prints it ("Exception ignored in …") and goes on.
"""

import os
import sys

import _signal  # signal's C module: ``import signal`` would first build its enums, a window of its own

from assay import startup

STOPPED = "assay: stopped (Ctrl-C); nothing is left running"


def _stop_at_once(signum: int, frame: object) -> None:
    os.write(2, (STOPPED + "\n").encode())
    os._exit(130)


_stop_at_once.assay_start_up = True  # type: ignore[attr-defined]  # how assay.cli knows it


def run() -> None:
    startup.starting()
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:  # not if started with SIGINT ignored
        _signal.signal(_signal.SIGINT, _stop_at_once)
    try:
        from assay.cli import main

        main()  # it says a Ctrl-C itself; one between its statements lands here
    except KeyboardInterrupt:
        print(STOPPED, file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    run()

"""``python -m assay`` and the ``assay`` script: the CLI, with Ctrl-C taken from the first moment.

Importing the CLI takes a moment (typer, pluggy, the plugins' entry points); a Ctrl-C then must
end assay in one line, never a traceback (docs/experiments.md). Nothing has started yet.
"""

import sys


def run() -> None:
    try:
        from assay.cli import main
    except KeyboardInterrupt:
        print("assay: stopped (Ctrl-C); nothing is left running", file=sys.stderr)
        sys.exit(130)
    main()


if __name__ == "__main__":
    run()

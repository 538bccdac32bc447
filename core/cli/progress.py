"""Live progress of Trials: a rich live line on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any


def _line(counts: Any, elapsed: float) -> str:
    left = counts.total - counts.done - counts.running
    grading = f"; grading: {counts.graded}/{counts.to_grade} Eval tasks graded" if counts.to_grade else ""
    return (
        f"Trials: {counts.running} running, {counts.done}/{counts.total} done, {counts.void} void, "
        f"{max(left, 0)} left{grading}, {int(elapsed) // 60:02d}:{int(elapsed) % 60:02d} elapsed"
    )


def reporter(*, quiet: bool = False) -> tuple[Callable[[str, Any], None], Callable[[], None]]:
    """A (report, close) pair. ``report(event, counts)`` is called by the run on every change."""
    began = time.monotonic()
    if quiet:
        return (lambda event, counts: None), (lambda: None)
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.live import Live

        latest: list[Any] = []
        live = Live(
            console=Console(stderr=True), refresh_per_second=4, transient=False,
            # redrawn on every refresh, so the elapsed time ticks between Trials too
            get_renderable=lambda: _line(latest[-1], time.monotonic() - began) if latest else "",
        )
        live.start()

        def report_live(event: str, counts: Any) -> None:
            latest[:] = [counts]

        return report_live, live.stop

    step = {"every": 1, "last": -1}

    def report_plain(event: str, counts: Any) -> None:
        """About ten lines for the Trials, plus one whenever a Trial turns void, and one per Eval task
        graded once only grading is left."""
        if event == "start":
            step["every"] = max(1, counts.total // 10)
        elif event in ("grading", "task graded"):  # tasks are graded as their Trials end
            if counts.done == counts.total:  # only grading is left, and it can take long: say how far it is
                print(_line(counts, time.monotonic() - began), file=sys.stderr, flush=True)
            return
        elif event == "trial ended" and counts.total - counts.done - counts.running > 0:
            return  # a worker takes the next Trial at once: print then, so `running` counts it too
        elif event not in ("trial ended", "trial started"):
            return
        mark = (counts.done // step["every"], counts.void)
        if mark != step["last"] or counts.done == counts.total:
            step["last"] = mark
            print(_line(counts, time.monotonic() - began), file=sys.stderr, flush=True)

    return report_plain, (lambda: None)


def steps(*, quiet: bool = False) -> tuple[Callable[[str, bool], None], Callable[[], None]]:
    """A (report, close) pair for work done in steps (``assay harnesses check``): ``report(text,
    done)`` names a step starting (``done`` false) or one finished, with what it found. On a
    terminal the step under way is a rich status line with a spinner and finished steps print
    above it; otherwise every line is printed plainly, as it happens, to stderr."""
    from assay.cli.output import untrusted  # a step's findings may quote what a CLI printed

    if quiet:
        return (lambda text, done: None), (lambda: None)
    if not sys.stderr.isatty():
        def report_plain(text: str, done: bool) -> None:
            print(untrusted(text), file=sys.stderr, flush=True)

        return report_plain, (lambda: None)
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True)
    status = console.status("", spinner="dots")
    status.start()

    def report_live(text: str, done: bool) -> None:
        if done:
            console.print(escape(untrusted(text)), highlight=False)
        else:
            status.update(escape(untrusted(text)))

    return report_live, status.stop

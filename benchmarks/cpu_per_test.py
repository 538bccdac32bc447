"""A pytest plugin for bench_tests.py: the CPU each test spends, its waited-for children included.

Wall time (``--durations``) hides where the suite's CPU goes: a test that waits on a sandbox costs
the machine nothing, one that starts fifty CLI processes costs seconds of it. With
``ASSAY_TEST_CPU=FOLDER`` set, each test's user+system seconds (setup, call and teardown; its own
process and every child it reaped) and its outcome are appended to ``FOLDER/<worker>.jsonl`` as it
ends, so a long run's failures can be read before pytest's summary.

Load with ``-p cpu_per_test`` and ``benchmarks`` on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path

import pytest


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_OUTCOMES: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed or report.skipped or report.nodeid not in _OUTCOMES:
        _OUTCOMES[report.nodeid] = "error" if report.failed and report.when != "call" else report.outcome


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    folder = os.environ.get("ASSAY_TEST_CPU")
    if not folder:
        yield
        return
    cpu, wall = _cpu(), time.perf_counter()
    yield
    row = {"test": item.nodeid, "cpu": round(_cpu() - cpu, 3), "wall": round(time.perf_counter() - wall, 3),
           "outcome": _OUTCOMES.pop(item.nodeid, "passed")}
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(Path(folder) / f"{worker}.jsonl", "a") as out:
        out.write(json.dumps(row) + "\n")

"""The test command an imported task runs (``[import.test_commands]`` in its ``suite.toml``).

A public task set names its repository and version but not how to run its tests; SWE-bench's own
harness keeps that in a table per repository and version. This is the small, user-extendable form
of that table (docs/eval-tasks.md, "Importing public task sets"): an entry is a runner's name or an
argv, with placeholders for the test files the task's test patch touches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

# A runner by name: its argv and where its per-test results come from (criteria.test_report).
RUNNERS: dict[str, tuple[tuple[str, ...], str]] = {
    "pytest": (("python3", "-m", "pytest", "-rA", "-p", "no:cacheprovider", "--junitxml={junit}", "{files}"), "junit"),
    "unittest": (("python3", "-m", "unittest", "-v", "{modules}"), "unittest"),
    # Django's own runner, as its CI runs it: one process, test labels relative to tests/.
    "django": (("python3", "tests/runtests.py", "--verbosity", "2", "--settings=test_sqlite", "--parallel", "1",
                "{modules:tests}"), "unittest"),
}
DEFAULTS = {"django/django": "django"}  # the rest run pytest, unless the suite's table says otherwise
FALLBACK = "pytest"
_MODULES = re.compile(r"\{modules(?::([^{}]+))?\}")


def entry_problems(table: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What is wrong with each entry of an ``[import.test_commands]`` table, as ``(key, message)``."""
    problems = []
    for key, value in table.items():
        if isinstance(value, str):
            if value not in RUNNERS:
                problems.append((key, f"unknown runner {value!r} (known: {', '.join(RUNNERS)}), or give an argv"))
        elif not (isinstance(value, list) and value and all(isinstance(a, str) and a for a in value)):
            problems.append((key, "expected a runner's name or a non-empty argv list of strings"))
    return problems


def command_for(table: Mapping[str, Any], repo: str, version: str | None) -> tuple[str, tuple[str, ...], str]:
    """The table entry for ``repo`` at ``version`` (``owner/repo@version``, then ``owner/repo``,
    then ``*``, then the defaults): its name, argv (placeholders unfilled) and report kind."""
    keys = ([f"{repo}@{version}"] if version else []) + [repo, "*"]
    for key in keys:
        if key in table:
            return _entry(key, table[key])
    return _entry(repo, DEFAULTS.get(repo, FALLBACK))


def _entry(key: str, value: str | Sequence[str]) -> tuple[str, tuple[str, ...], str]:
    if isinstance(value, str):
        argv, report = RUNNERS[value]
        return value, argv, report
    return key, tuple(value), "junit" if any("{junit}" in a for a in value) else "unittest"


def filled(argv: Sequence[str], files: Sequence[str]) -> list[str]:
    """``argv`` with ``{files}`` (an argument that is only that) replaced by the test files, and
    ``{modules}`` / ``{modules:DIR}`` by them as dotted modules (relative to ``DIR``, where inside
    it); ``{junit}`` is left for the Grader."""
    out: list[str] = []
    for arg in argv:
        if arg == "{files}":
            out += files
            continue
        named = _MODULES.fullmatch(arg)
        if named:
            out += [_module(f, named[1]) for f in files]
        else:
            out.append(arg)
    return out


def _module(path: str, under: str | None) -> str:
    if under and path.startswith(under.rstrip("/") + "/"):
        path = path[len(under.rstrip("/")) + 1:]
    return path.removesuffix(".py").replace("/", ".")

"""Every trio run keeps Ctrl-C: it goes through ``assay.sessions.interrupts.run_trio``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def trio_runs(root: Path, *folders: str) -> list[str]:
    """Each ``trio.run(...)`` call under ``folders`` of ``root``, as path:line."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run"
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "trio"):
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_trio_run_but_the_one_that_keeps_ctrl_c():
    """Inside a command, Ctrl-C's handler notes it before raising it (docs/experiments.md), and
    trio installs its own protected handler only over Python's default one: a bare trio.run would
    run without trio's protection and without the note."""
    runs = trio_runs(ROOT, "core", "plugins")
    assert {run.split(":")[0] for run in runs} == {"core/sessions/interrupts.py"}, runs


def test_the_finder_finds_a_trio_run(tmp_path):
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "m.py").write_text("import trio\n\ntrio.run(f)\nother.run(f)\n")
    assert trio_runs(tmp_path, "core") == ["core/m.py:3"]

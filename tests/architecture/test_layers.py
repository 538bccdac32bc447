"""The core's layout (issue: "the core's layout shows its parts"): no import cycle anywhere in
``core/``, imports pointing down the layers only, the core never importing a plugin, and the
Harness-checking tools off the Trial path.

Imports are read from the source (every ``import`` statement, including those inside functions
and ``if TYPE_CHECKING:``), so a cycle hidden behind a lazy import still fails.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"

# Lowest first; a part may import only parts strictly below it (and itself).
LAYERS = ["verdict|startup", "storage", "hooks", "traces", "evaltasks|sessions", "scripted_provider|pairs", "engine|scoring", "harnesscheck|console", "cli"]
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts.split("|")}


def module_name(path: Path) -> str:
    parts = ["assay", *path.relative_to(CORE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def core_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(CORE.rglob("*.py"))}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Every assay module ``path`` imports, resolving ``from pkg import mod`` to the module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("assay"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("assay") and not node.level:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in known or sub.startswith("assay.plugins") else node.module)
    return found


def graph() -> dict[str, set[str]]:
    modules = core_modules()
    known = set(modules)
    return {name: imports_of(path, known) for name, path in modules.items()}


def part(module: str) -> str | None:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else None


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), or a module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    """The checker itself: a two-module loop and a three-module loop are both reported."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"x": {"y"}, "y": {"z"}, "z": {"x"}}) == [["x", "y", "z"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_core() -> None:
    assert cycles(graph()) == []


def test_every_part_is_in_a_layer() -> None:
    parts = {part(m) for m in core_modules()} - {None, "__main__"}
    assert parts <= set(RANK), f"parts with no layer: {sorted(parts - set(RANK))}"


def test_imports_point_down_only() -> None:
    wrong = []
    for module, targets in graph().items():
        mine = part(module)
        if mine not in RANK:
            continue
        for target in targets:
            theirs = part(target)
            if theirs is None or theirs == mine:
                continue
            if theirs not in RANK or RANK[theirs] >= RANK[mine]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_the_verdict_imports_nothing_else_of_assay() -> None:
    outside = {f"{m} -> {t}" for m, ts in graph().items() if part(m) == "verdict" for t in ts if part(t) != "verdict"}
    assert outside == set()


def test_the_core_never_imports_a_plugin() -> None:
    assert {f"{m} -> {t}" for m, ts in graph().items() for t in ts if t.startswith("assay.plugins")} == set()


def test_the_engine_knows_no_screen() -> None:
    screen = {"typer", "rich", "click"}
    found = []
    for path in (CORE / "engine").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in screen]
    assert found == []


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_the_trial_path_does_not_import_the_harness_checking_tools() -> None:
    """Nothing on the Trial path imports the scripted provider or the Harness check unless
    ``--scripted-provider`` is given (they are imported inside the functions that need them)."""
    loaded = _modules_after(
        "import assay.engine.start, assay.engine.runner, assay.cli.experiment_cmd\n"
        "from assay.hooks import plugin_manager; plugin_manager.load()"
    )
    assert "assay.engine.runner" in loaded  # the check can fail: the Trial path was imported
    assert not {m for m in loaded if m.startswith(("assay.scripted_provider", "assay.harnesscheck", "trustme"))}

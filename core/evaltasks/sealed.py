"""A task's sealed files (``criteria.sealed``): what it lays over a Trial's committed tree to grade it.

Apart from :mod:`.manifests` (which reads TOML through cattrs) so a Grader plugin can use them
without weighing on ``assay --help``.
"""

from __future__ import annotations

from pathlib import Path

from assay.storage.records import EvalTask


def sealed_folder(task: EvalTask) -> Path | None:
    """The folder of the task's sealed files (``criteria.sealed``), or None."""
    name = task.criteria.get("sealed")
    return (task.folder / name).resolve() if isinstance(name, str) else None


def sealed_files(task: EvalTask) -> list[str]:
    """Every sealed file's path inside its folder (the path it is laid over in the Trial's tree), sorted."""
    folder = sealed_folder(task)
    if folder is None or not folder.is_dir():
        return []
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and not p.is_symlink())

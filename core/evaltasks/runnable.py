"""Whether a process task's test command can run on this host (``assay suites check``).

A process task's environment is the user's: its test command runs in the grading sandbox with the
host's toolchain on PATH. An imported public task often needs a runner or a repository file the
host lacks; this says so before an Experiment spends Trials on a task no Grader can run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from assay.storage.git import GitError, git
from assay.storage.records import EvalTask

_MODULE = re.compile(r"[A-Za-z_][\w.]*")
_PYTHON = re.compile(r"python[\d.]*")


class Toolchain:
    """What this host runs, each program and module looked up once."""

    def __init__(self) -> None:
        self._modules: dict[tuple[str, str], bool] = {}

    def why_not(self, task: EvalTask) -> str | None:
        """Why ``task``'s test command can't run here, or None: its program not on PATH, the module
        it runs with ``-m`` not importable by that program, or the script it runs not in the repository
        at its base."""
        argv = task.criteria.get("test_command") or []
        if not argv:
            return None
        shown = " ".join(argv[:3])
        program = shutil.which(argv[0])
        if program is None:
            return f"`{shown}`: {argv[0]} is not on PATH"
        python = _PYTHON.fullmatch(Path(argv[0]).name)
        if python and len(argv) > 2 and argv[1] == "-m" and _MODULE.fullmatch(argv[2]):
            if not self._importable(program, argv[2]):
                return f"`{shown}`: {argv[0]} has no module {argv[2]} (install it where {program} finds it)"
        elif python and len(argv) > 1 and argv[1].endswith(".py") and not argv[1].startswith(("-", "/")):
            try:
                git("cat-file", "-e", f"{task.base}:{argv[1]}", cwd=Path(task.repository))
            except (GitError, OSError):
                return f"`{shown}`: {argv[1]} is not in the repository at its base"
        return None

    def _importable(self, program: str, module: str) -> bool:
        """Whether ``program -I`` (isolated, as in the grading sandbox, no user site or PYTHONPATH)
        finds ``module``, without running it."""
        key = (program, module)
        if key not in self._modules:
            top = module.split(".")[0]
            try:
                found = subprocess.run([program, "-I", "-c", f"import importlib.util as u, sys; "
                                        f"sys.exit(u.find_spec({top!r}) is None)"],
                                       capture_output=True, timeout=30, cwd="/").returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                found = False
            self._modules[key] = found
        return self._modules[key]

"""One mechanical check, offline in the sandbox: a test command on a checkout the host prepared.

The code Grader runs a task's test command this way, and Pair evidence runs each Arm's new
test files the same way, so both see the same sandbox: no network, the checkout and a fresh
home writable, nothing else of the host's but the read-only toolchains.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import attrs
from assay.hooks.protocols import Invocation, SandboxBackend


@attrs.frozen
class CheckRun:
    exit_code: int | None
    timed_out: bool
    output: str  # stdout then the end of stderr

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


async def run_check(backend: SandboxBackend, argv: Sequence[str], checkout: Path, folder: Path,
                    timeout: float) -> CheckRun:
    """Run ``argv`` in ``checkout`` offline under ``timeout``; ``folder`` (created) holds its home
    and the sandbox's logs."""
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    invocation = Invocation(
        argv=tuple(argv), cwd=checkout,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"},
        read_write=(checkout, home), log_dir=folder,
    )
    result = await backend.run(invocation, timeout=timeout, on_line=lines.append)
    output = "".join(line if line.endswith("\n") else line + "\n" for line in lines) + result.stderr_tail
    return CheckRun(result.exit_code, result.timed_out, output)

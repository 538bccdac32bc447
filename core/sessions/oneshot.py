"""One Grader-like session of a Harness: run it in a sandbox, keep its log, read its outcome.

Model Graders and the Scoring run's Grader both start a Harness on a packet and want only how the
session ended (the answer is a file it writes); Trials need more and go through their Arm.
"""

from __future__ import annotations

from pathlib import Path

from assay.hooks.protocols import Harness, ProcessResult, SandboxBackend, SessionOutcome, SessionRequest
from assay.storage.untrusted import capped_log


async def run_session(harness: Harness, request: SessionRequest, backend: SandboxBackend, *, timeout: float,
                      log: Path) -> tuple[SessionOutcome, ProcessResult]:
    """The session's outcome (as its Harness reads the stream) and its process; the stream is kept in ``log``."""
    decoder = harness.decoder()
    with capped_log(log) as out:
        def on_line(line: str) -> None:
            out.write(line if line.endswith("\n") else line + "\n")
            decoder.feed(line)

        process = await backend.run(harness.invocation(request), timeout=timeout, on_line=on_line)
    return decoder.finish(process), process

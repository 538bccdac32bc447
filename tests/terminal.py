"""Running a command on a pseudo-terminal and answering its questions, as a person at a terminal would."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from collections.abc import Mapping, Sequence


def on_terminal(argv: Sequence[str], env: Mapping[str, str], answers: Sequence[tuple[bytes, str]] = (),
                timeout: float = 120, term: str = "dumb") -> tuple[int, str]:
    """Run ``argv`` on a pty; each time the next prompt in ``answers`` shows, type its answer.
    Returns the exit code and everything the terminal showed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, close_fds=True,
                            env={"TERM": term, **env})
    os.close(follower)
    seen, pending, shown_up_to = b"", list(answers), 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not select.select([leader], [], [], 0.5)[0]:
            continue
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        seen += chunk
        if pending and pending[0][0] in seen[shown_up_to:]:
            shown_up_to = seen.index(pending[0][0], shown_up_to) + len(pending[0][0])
            os.write(leader, pending.pop(0)[1].encode() + b"\n")
    os.close(leader)
    return proc.wait(timeout=30), seen.decode(errors="replace")

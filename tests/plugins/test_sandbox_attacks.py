"""Attacks from inside a bwrap Trial on what the host trusts (issue 14, findings 4-6), made for real.

Each test runs hostile code as the Trial's command and asserts the host is untouched. Tests
that need bwrap skip with the reason its check gives; a test of a limit this machine can't
enforce skips with the reason ``assay sandbox check`` reports it missing.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from assay.hooks.protocols import Invocation, ProcessResult
from assay.plugins.sandbox_bwrap.backend import BwrapBackend, _reading
from assay.plugins.sandbox_bwrap.handshake import Handshake
from assay.storage.records import VoidCause

BACKEND = BwrapBackend(grace=0.5, poll=0.05, drain=1.0)


@functools.cache
def _works() -> str:
    check = BACKEND.check()
    return "" if check.works else check.reason


@pytest.fixture
def bwrap() -> BwrapBackend:
    if _works():
        pytest.skip(f"bwrap can't run here: {_works()}")
    return BACKEND


@pytest.fixture
def trial(tmp_path: Path) -> Path:
    """A Trial folder with its repository (the command's working folder) and home."""
    (tmp_path / "trial" / "repo").mkdir(parents=True)
    (tmp_path / "trial" / "home").mkdir()
    return tmp_path / "trial"


def attack(backend: BwrapBackend, trial: Path, code: str, *, timeout: float = 60) -> tuple[ProcessResult, list[str]]:
    """Run ``code`` (Python) as the Trial's command; its stdout lines and the result."""
    lines: list[str] = []
    invocation = Invocation(
        argv=(sys.executable, "-c", textwrap.dedent(code)), cwd=trial / "repo",
        env={"PATH": "/usr/bin:/bin", "HOME": str(trial / "home")},
        read_write=(trial / "repo", trial / "home"), log_dir=trial,
    )
    result = trio.run(functools.partial(backend.run, invocation, timeout=timeout, on_line=lines.append))
    return result, lines


@pytest.fixture
def victim() -> Iterator[int]:
    """A host process the Trial must not be able to touch."""
    proc = subprocess.Popen(["sleep", "120"])
    yield proc.pid
    proc.kill()
    proc.wait()


# --- Finding 5: the relay's report pipe -------------------------------------------------------------


def test_the_trial_cannot_reach_the_relays_report_pipe(bwrap: BwrapBackend, trial: Path, victim: int) -> None:
    """Finding 5: the report fd named in /proc/1/cmdline can't be opened through /proc/1/fd, the
    relay can't be ptraced, the command holds no descriptor of the sandbox's; so a forged
    ``child-pid`` can't move a host process into the Trial's cgroup or raise its oom_score_adj."""
    before = Path(f"/proc/{victim}/cgroup").read_text(), Path(f"/proc/{victim}/oom_score_adj").read_text()
    code = f"""
        import ctypes, os
        args = open("/proc/1/cmdline", "rb").read().split(b"\\0")
        report = int(args[args.index(b"-S") + 2])
        try:
            with open(f"/proc/1/fd/{{report}}", "w") as pipe:
                pipe.write('{{"child-pid": {victim}}}\\n')
            print("forged", flush=True)
        except OSError as e:
            print("open", type(e).__name__, flush=True)
        libc = ctypes.CDLL(None, use_errno=True)
        print("ptrace", libc.ptrace(16, 1, 0, 0), ctypes.get_errno(), flush=True)  # PTRACE_ATTACH
        print("fds", sorted(int(fd) for fd in os.listdir("/proc/self/fd")), flush=True)
    """
    result, lines = attack(bwrap, trial, code)
    assert result.exit_code == 0 and result.void_cause is None, result.stderr_tail
    assert lines[0] == "open PermissionError" and lines[1] == "ptrace -1 1"  # EPERM
    assert lines[2] == "fds [0, 1, 2, 3]"  # stdin/out/err and listdir's own
    assert (Path(f"/proc/{victim}/cgroup").read_text(), Path(f"/proc/{victim}/oom_score_adj").read_text()) == before


class Recorded:
    """A cap that records whom it admitted."""

    def __init__(self) -> None:
        self.admitted: list[int] = []

    def admit(self, pid: int) -> None:
        self.admitted.append(pid)

    def killed(self) -> bool:
        return False

    def remove(self) -> None:
        return None


def reports(*lines: bytes) -> tuple[Handshake, Recorded]:
    """What the host makes of ``lines`` on the report pipe."""
    handshake, cap = Handshake.open(), Recorded()
    for line in lines:
        os.write(handshake.report_bwrap, line)
    handshake.hand_over()
    handshake._close(handshake.go_read)  # no relay here to read the go
    try:
        trio.run(handshake.follow, cap)
    finally:
        handshake.close()
    return handshake, cap


def test_only_the_first_report_counts_and_only_pid_1_of_a_namespace_below_ours(victim: int) -> None:
    """Finding 5: a ``child-pid`` naming a host process is refused (a sandbox failure); after the
    first well-formed report of a kind, later ones are ignored."""
    handshake, cap = reports(f'{{"child-pid": {victim}}}\n'.encode(), b"started\n")
    assert cap.admitted == [] and handshake.broken and "malformed" in handshake.failure
    handshake, cap = reports(b"started\n", b"exit 3\n", b"exit 0\n")
    assert handshake.started and handshake.exit_code == 3 and not handshake.broken


@pytest.mark.parametrize("line", [b"{not json\n", b'["child-pid"]\n', b"exit zero\n", b"hello\n", b"x" * 5000])
def test_a_malformed_report_fails_the_sandbox_not_the_experiment(line: bytes) -> None:
    """Finding 5: a malformed line is a sandbox failure of that Trial, never an exception."""
    handshake, _ = reports(b"started\n", line)
    assert handshake.broken and "malformed" in handshake.failure


def test_a_malformed_report_makes_the_trial_void_sandbox_failed() -> None:
    """Finding 5: the backend reads a broken handshake as a Void Trial (``sandbox_failed``)."""
    handshake, _ = reports(b"started\n", b"exit 0\n", b"{oops\n")
    result = _reading(ProcessResult(exit_code=0, backend="bwrap", duration=1.0), handshake, capped=False)
    assert result.void_cause is VoidCause.SANDBOX_FAILED and "malformed" in result.stderr_tail

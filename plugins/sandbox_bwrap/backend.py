"""The bwrap backend: a Trial sees nothing else, reaches only its provider, and leaves nothing behind.

Each run starts, for that Trial alone: a memory cap (:mod:`.memory`), the allowlisting proxy
on a Unix socket in a private folder (:mod:`.proxy`), and bwrap with new network, PID and IPC
namespaces over the file system :mod:`.mounts` describes, whose PID 1 is the relay
(:mod:`.relay`). The run ends when the command exits, its timeout passes, its cap is hit, or
it is cancelled; then the PID namespace, the proxy and the cap go with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs
import trio

from assay.plugins.sandbox_bwrap import memory, mounts
from assay.plugins.sandbox_bwrap.proxy import Allowlist, Proxy, own_addresses, resolver
from assay.proctree import ProcessTree
from assay.protocols import Invocation, ProcessResult, SandboxCheck, VoidCause
from assay.supervise import Supervisor

RELAY = Path(__file__).with_name("relay.py")
INSIDE = Path("/run/assay")  # where the relay and the proxy's socket folder appear in the sandbox
SOCKET = "proxy.sock"
RELAY_PORT = 3128
PROXY_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
# Own network, PID and IPC namespaces; no capabilities, even when assay runs as root (with
# CAP_SYS_ADMIN a Trial could mount the host's disks); gone with its parent; no terminal to steal.
ISOLATION = ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL", "--die-with-parent",
             "--new-session", "--as-pid-1")
PROXY_LOG = "proxy.jsonl"
_USERNS_HINTS = (
    ("/proc/sys/kernel/unprivileged_userns_clone", "0", "unprivileged user namespaces are disabled"),
    ("/proc/sys/user/max_user_namespaces", "0", "user namespaces are disabled (user.max_user_namespaces=0)"),
    ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor restricts unprivileged user namespaces"),
)


@attrs.frozen
class BwrapBackend(Supervisor):
    """Runs an :class:`Invocation` in bwrap.

    ``memory`` is each Trial's cap in bytes (default: ``$ASSAY_TRIAL_MEMORY``, e.g. ``8G``, else
    half this machine's memory). ``hosts_file`` gives the proxy names it answers without DNS,
    as a private hosts file (tests point names at their own servers).
    """

    name = "bwrap"
    memory: int | None = None
    hosts_file: Mapping[str, Sequence[str]] = attrs.field(factory=dict)
    executable: str = "bwrap"

    def check(self) -> SandboxCheck:
        """Run a real, empty Trial (relay and memory cap included) and say which cap Trials get."""
        caps = memory.detect()
        described = caps.describe(self._limit())
        if shutil.which(self.executable) is None:
            return SandboxCheck(False, f"{self.executable} is not installed (apt-get install bubblewrap)", described)
        cap = caps.start(self._limit())
        try:
            with tempfile.TemporaryDirectory(prefix="assay-check-") as sockets:
                read_status, write_status = os.pipe()
                try:
                    invocation = Invocation(argv=("true",), cwd=Path("/"))
                    done = subprocess.run(
                        self.command(invocation, Path(sockets), write_status, cap), env={"PATH": "/usr/bin:/bin"},
                        pass_fds=(write_status,), capture_output=True, text=True, timeout=30,
                    )
                finally:
                    os.close(write_status)
                    status = _read_status(read_status)
        finally:
            cap.remove()
        if done.returncode == 0 and "exit 0" in status:
            return SandboxCheck(True, "", described)
        return SandboxCheck(False, _why(done.stderr), described)

    async def run(
        self, invocation: Invocation, *, timeout: float, on_line: Callable[[str], None]
    ) -> ProcessResult:
        cap = memory.detect().start(self._limit())
        try:
            with tempfile.TemporaryDirectory(prefix="assay-proxy-") as sockets:
                proxy = Proxy(
                    Allowlist.of(invocation.hosts), (invocation.log_dir or invocation.cwd.parent) / PROXY_LOG,
                    resolver(self.hosts_file), own_addresses(),
                )
                read_status, write_status = os.pipe()
                try:
                    async with trio.open_nursery() as nursery:
                        await nursery.start(proxy.serve, Path(sockets) / SOCKET)
                        result = await self.supervise(
                            self.command(invocation, Path(sockets), write_status, cap), cwd=invocation.cwd,
                            env={**invocation.env, **dict.fromkeys(PROXY_ENV, f"http://127.0.0.1:{RELAY_PORT}")},
                            timeout=timeout, on_line=on_line, stop_signals=invocation.stop_signals,
                            preexec_fn=None, pass_fds=(write_status,), signal_stop=_signal_session,
                            end_early=cap.killed,
                        )
                        nursery.cancel_scope.cancel()
                finally:
                    os.close(write_status)
                    status = _read_status(read_status)
            return _reading(result, status, capped=cap.killed())
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(cap.remove)

    def command(self, invocation: Invocation, sockets: Path, status_fd: int, cap: memory.TrialCap) -> list[str]:
        """The bwrap command line for ``invocation``, its proxy's socket folder, status pipe and cap."""
        return [
            self.executable, *ISOLATION, *mounts.toolchains(), *mounts.binds(invocation), *cap.binds(INSIDE),
            "--ro-bind", str(RELAY), str(INSIDE / RELAY.name), "--ro-bind", str(sockets), str(INSIDE / "proxy"),
            "--chdir", str(invocation.cwd), "--",
            os.path.realpath(sys.executable), "-I", "-S", str(INSIDE / RELAY.name),
            str(status_fd), str(INSIDE / "proxy" / SOCKET), str(RELAY_PORT), *cap.relay_args(INSIDE),
            "--", *invocation.argv,
        ]

    def _limit(self) -> int:
        return self.memory or memory.default_limit()


def _signal_session(tree: ProcessTree, signum: int) -> None:
    """Signal the session's process group, which bwrap's child leads (``--new-session``).

    That child is the relay, PID 1 inside, which ignores it; the command and what it started
    in its group get it, as from a terminal's Ctrl-C.
    """
    for proc in tree.known.values():
        if proc.ppid == tree.leader and not proc.zombie:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pgid, signum)


def _read_status(fd: int) -> list[str]:
    """The lines the relay reported (its writers have all exited by now); closes ``fd``."""
    os.set_blocking(fd, False)  # still, nothing may hang the backend here
    with open(fd, "rb", buffering=0) as pipe:
        return (pipe.read() or b"").decode(errors="replace").splitlines()


def _reading(result: ProcessResult, status: list[str], *, capped: bool) -> ProcessResult:
    """The command's own exit status (not bwrap's), and the sandbox's void cause if there is one."""
    exits = [line.split()[1] for line in status if line.startswith("exit ")]
    if exits:
        result = attrs.evolve(result, exit_code=int(exits[-1]))
    if capped:
        return attrs.evolve(result, void_cause=VoidCause.MEMORY_CAP)
    if "started" not in status and not result.timed_out:  # bwrap or the relay failed to set up
        return attrs.evolve(result, void_cause=VoidCause.SANDBOX_FAILED)
    return result


def _why(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    reasons = [lines[-1] if lines else "bwrap failed without a message"]
    reasons += [hint for path, value, hint in _USERNS_HINTS if _sysctl(path) == value]
    return "; ".join(reasons)


def _sysctl(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None

"""The bwrap backend: a Trial sees nothing else, reaches only its provider, and leaves nothing behind.

Each run starts, for that Trial alone: its limits (memory, processes, file size: :mod:`.limits`),
a capped disk for its writable folders (:mod:`.disk`), the allowlisting proxy on a Unix socket
in a private folder (:mod:`.proxy`), and bwrap with new network, PID and IPC namespaces and a
seccomp filter (:mod:`.seccomp`) over the file system :mod:`.mounts` describes, whose PID 1 is
the relay (:mod:`.relay`). The run ends when the command exits, its timeout passes, its cap is
hit, or it is cancelled; then the PID namespace, the proxy, the limits and the disk go with it,
and what the Trial left is made harmless (:mod:`.residue`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs
import trio
from assay.hooks.protocols import PROXY_LOG, Invocation, ProcessResult, SandboxCheck
from assay.plugins.sandbox_bwrap import disk, limits, memory, mounts, pids, relays, residue, seccomp
from assay.plugins.sandbox_bwrap.broker import Broker, BrokerCA, upstream_context
from assay.plugins.sandbox_bwrap.handshake import Handshake
from assay.plugins.sandbox_bwrap.limits import TrialLimits
from assay.plugins.sandbox_bwrap.meter import ProxyMeter
from assay.plugins.sandbox_bwrap.proxy import (Allowlist, Proxy, Sockets, own_addresses, private_hosts, resolver,
                                              upstream_table)
from assay.sessions import hostkills, interrupts
from assay.sessions.proctree import ProcessTree
from assay.sessions.supervise import Supervisor
from assay.storage import owners
from assay.storage.records import VoidCause

INSIDE = relays.INSIDE  # where the relay and the proxy's socket folder appear in the sandbox
SOCKET = "proxy.sock"
CA_FILE = "ca.pem"  # the credential broker's CA certificate, beside the socket
RELAY_PORT = 3128
PROXY_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
# Own network, PID and IPC namespaces; no capabilities, even when assay runs as root (with
# CAP_SYS_ADMIN a Trial could mount the host's disks); gone with its parent; no terminal to steal.
ISOLATION = ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL", "--die-with-parent",
             "--new-session", "--as-pid-1")
_USERNS_HINTS = (
    ("/proc/sys/kernel/unprivileged_userns_clone", "0", "unprivileged user namespaces are disabled"),
    ("/proc/sys/user/max_user_namespaces", "0", "user namespaces are disabled (user.max_user_namespaces=0)"),
    ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor restricts unprivileged user namespaces"),
)


@attrs.frozen
class BwrapBackend(Supervisor):
    """Runs an :class:`Invocation` in bwrap.

    ``memory_limit`` is each Trial's cap in bytes (default: ``$ASSAY_TRIAL_MEMORY``, e.g. ``8G``, else
    half this machine's memory); ``memory_caps`` how it is enforced (default: the strongest way
    this machine offers). ``hosts_file`` gives the proxy names it answers without DNS, as a
    private hosts file (tests point names at their own servers). ``upstreams`` sends an allowed
    host's tunnels to a Unix socket instead (a scripted provider, whose certificate
    ``upstream_ca`` signed); only :meth:`with_upstreams` sets it, for ``assay harnesses check`` and
    scripted Experiments, never a real Trial. ``ca`` is the credential broker's CA: one per
    backend, so one per Experiment (the engine takes one backend for an Experiment's run), its
    key in this process's memory only; ``disk_pool`` likewise holds the Experiment's emptied
    disk-cap file systems for its next Trials, and ``sockets`` the folder of its Trials' proxy sockets.
    """

    name = "bwrap"
    tracks_tree = False  # nothing leaves the Trial's PID namespace, whose end the relay's pidfd shows
    brokers_credentials = True  # each Invocation's login is held by its proxy (:mod:`.broker`)
    memory_limit: int | None = None
    memory_caps: memory.MemoryCaps | None = None
    hosts_file: Mapping[str, Sequence[str]] = attrs.field(factory=dict)
    executable: str = "bwrap"
    private_hosts: tuple[str, ...] = attrs.field(factory=private_hosts)  # may resolve to private addresses
    pids_limit: int | None = None  # tasks per Trial (default: $ASSAY_TRIAL_PIDS, else pids.DEFAULT_LIMIT)
    pids_caps: pids.PidsCaps | None = None  # how it is enforced (default: what this machine offers)
    file_size: int | None = None  # bytes per file written (default: $ASSAY_TRIAL_FILE_SIZE, else 4 GiB)
    disk_limit: int | None = None  # bytes of writable space (default: $ASSAY_TRIAL_DISK, else 8 GiB)
    disk_caps: disk.DiskCaps | None = None  # how it is enforced (default: what this machine offers)
    relay: relays.Relay | None = None  # each Trial's PID 1 (default: the C relay where it builds, :mod:`.relays`)
    upstreams: Mapping[str, Path] = attrs.field(factory=dict)
    upstream_ca: Path | None = None
    ca: BrokerCA = attrs.field(factory=BrokerCA, eq=False, repr=False)
    disk_pool: disk.Pool = attrs.field(factory=disk.Pool, eq=False, repr=False)  # emptied file systems for its next Trials
    sockets: Sockets = attrs.field(factory=Sockets, eq=False, repr=False)  # its Trials' proxy sockets
    layered: dict[Path, Path] = attrs.field(factory=dict, eq=False, repr=False)  # running sessions' folders -> their live view
    _settled: list[Settled] = attrs.field(factory=list, init=False, eq=False, repr=False)  # worked out by the first Trial

    def with_upstreams(self, upstreams: Mapping[str, Path], ca_file: Path | None = None) -> BwrapBackend:
        """This backend, its proxy sending each ``host[:port]`` named to its Unix socket, whose
        certificate ``ca_file`` signed (the same CA for every upstream)."""
        return attrs.evolve(self, upstreams={**self.upstreams, **upstreams}, upstream_ca=ca_file or self.upstream_ca)

    def settled(self) -> Settled:
        """What each of this backend's Trials gets, worked out by the first (one backend runs one
        Experiment: its caps and limits are those it started with)."""
        if not self._settled:
            self._settled.append(Settled.of(self))
        return self._settled[0]

    def check(self) -> SandboxCheck:
        """Run a real, empty Trial (proxy, relay and memory cap included); say which cap Trials get.

        It runs a trio loop of its own, so call it outside one.
        """
        fixed = self.settled()
        source = "set for this backend" if self.memory_limit else memory.default_and_source()[1]
        described = f"{fixed.memory_caps.describe(fixed.memory_limit)}; {source}"
        limits_here = limits.in_force(
            fixed.memory_caps, fixed.memory_limit, fixed.pids_caps, fixed.pids_limit, fixed.disk_caps,
            fixed.disk_limit, fixed.file_size, memory_source=source, relay=fixed.relay)
        if shutil.which(self.executable) is None:
            return SandboxCheck(False, f"{self.executable} is not installed (apt-get install bubblewrap)", described,
                                limits_here)
        with tempfile.TemporaryDirectory(prefix=f"assay-check-{owners.tag()}-") as folder:
            invocation = Invocation(argv=("true",), cwd=Path(folder), env={"PATH": "/usr/bin:/bin"},
                                    read_write=(Path(folder),))
            try:
                result = interrupts.run_trio(functools.partial(self.run, invocation, timeout=30, on_line=lambda line: None))
            except OSError as e:
                return SandboxCheck(False, f"{type(e).__name__}: {e}", described, limits_here)
        if result.exit_code == 0 and result.void_cause is None:
            return SandboxCheck(True, "", described, limits_here)
        return SandboxCheck(False, _why(result.stderr_tail), described, limits_here)

    async def run(
        self, invocation: Invocation, *, timeout: float, on_line: Callable[[str], None]
    ) -> ProcessResult:
        for prefix in ("assay-proxy-", "assay-check-"):  # what a killed run left
            owners.sweep(Path(tempfile.gettempdir()), prefix, shutil.rmtree)
        fixed = self.settled()
        cap = TrialLimits.start(fixed.memory_caps, fixed.memory_limit, fixed.pids_caps, fixed.pids_limit,
                                fixed.file_size)
        handshake = Handshake.open(seccomp.program() if seccomp.supported() else None, fixed.relay.code, fixed.etc_files)
        staged = disk.Staged(0, None)
        oom_before = hostkills.oom_kills()
        wound_down = False

        def wind_down() -> str:  # once, even if it raises: its steps each ran
            nonlocal wound_down
            wound_down = True
            return _wind_down(cap, staged, invocation.read_write)

        try:
            staged = await trio.to_thread.run_sync(
                fixed.disk_caps.start, fixed.disk_limit, own_folders(invocation), self.disk_pool)
            self.layered.update(staged.sources)
            socket = self.sockets.new()
            broker, trust, ca = self._broker(invocation)
            proxy = Proxy(
                Allowlist.of(invocation.hosts), (invocation.log_dir or invocation.cwd.parent) / PROXY_LOG,
                resolver(self.hosts_file), own_addresses(), upstreams=upstream_table(self.upstreams),
                private=Allowlist.of(self.private_hosts), broker=broker, meter=ProxyMeter.from_env(),
                provider=Allowlist.of(invocation.provider_hosts),
            )
            async with trio.open_nursery() as nursery:
                await nursery.start(proxy.serve, socket)
                async with trio.open_nursery() as reports:
                    reports.start_soon(handshake.follow, cap)
                    result = await self.supervise(
                        self.command(invocation, socket, handshake, staged.sources, ca=ca), cwd=invocation.cwd,
                        env={**invocation.env, **dict.fromkeys(PROXY_ENV, f"http://127.0.0.1:{RELAY_PORT}"), **trust},
                        timeout=timeout, on_line=on_line, stop_signals=invocation.stop_signals,
                        pass_fds=handshake.child_ends, on_start=handshake.hand_over,
                        signal_stop=_signal_session, all_gone=handshake.all_gone,
                        end_early=lambda: (cap.killed() or proxy.meter.overrun is not None
                                           or bool(proxy.refused_provider)),
                    )
                    reports.cancel_scope.deadline = trio.current_time() + self.drain  # the last reports
                nursery.cancel_scope.cancel()
            _forget(self.layered, staged.sources)
            capped, peak, notes = cap.killed(), cap.peak(), cap.notes()
            notes += await trio.to_thread.run_sync(wind_down)
            result = attrs.evolve(result, stderr_tail=result.stderr_tail + notes,
                                  overrun=result.overrun or proxy.meter.overrun or staged.lost, memory_peak=peak)
            return hostkills.judge(_reading(result, handshake, capped=capped, refused=proxy.refused_provider),
                                   oom_before)
        finally:
            handshake.close()
            _forget(self.layered, staged.sources)
            if not wound_down:
                with trio.CancelScope(shield=True):  # when cancelled: the Trial's work is kept
                    await trio.to_thread.run_sync(wind_down)

    def live(self, folder: Path) -> Path:
        """Where the host reads what a running session has written in ``folder``: its overlay, while
        the folder is layered on the session's capped disk (the folder itself shows only what the
        session started with until it ends)."""
        folder = Path(os.path.abspath(folder))
        return self.layered.get(folder, folder)

    def _broker(self, invocation: Invocation) -> tuple[Broker | None, dict[str, str], Path | None]:
        """The Trial's credential broker, the variables through which its CLI trusts the broker's
        CA, and that CA's certificate (bound read-only beside the proxy's socket)."""
        if invocation.broker is None:
            return None, {}, None
        ca = self.sockets.holding(CA_FILE, self.ca.pem())
        broker = Broker(invocation.broker, self.ca, upstream_context(self.upstream_ca))
        return broker, dict.fromkeys(invocation.broker.ca_variables, str(INSIDE / "proxy" / CA_FILE)), ca

    def command(self, invocation: Invocation, socket: Path, handshake: Handshake,
                staged: Mapping[Path, Path] | None = None, *, ca: Path | None = None) -> list[str]:
        """The bwrap command line for ``invocation``, its proxy's socket, its handshake and the
        broker's CA certificate if it has one (``staged``: what is bound in each writable folder's
        place, its layer on the Trial's capped disk)."""
        relay = self.settled().relay
        return [
            self.executable, *ISOLATION, "--json-status-fd", str(handshake.report_bwrap),
            *(("--seccomp", str(handshake.seccomp)) if handshake.seccomp is not None else ()),
            *self.settled().toolchains, *mounts.copies(handshake.files),
            *mounts.binds(invocation, staged, self.settled().disk_limit),
            "--perms", relay.perms, "--file", str(handshake.code), str(relay.inside),
            "--ro-bind", str(socket), str(INSIDE / "proxy" / SOCKET),
            *(("--ro-bind", str(ca), str(INSIDE / "proxy" / CA_FILE)) if ca is not None else ()),
            "--chdir", str(invocation.cwd), "--",
            *relay.argv(), str(handshake.report_relay),
            str(handshake.go_read), str(INSIDE / "proxy" / SOCKET), str(RELAY_PORT), str(seccomp.keyctl_number() or "-"),
            "--", *invocation.argv,
        ]


@attrs.frozen
class Settled:
    """A backend's caps and limits (its own, else what this machine offers), its Trials' read-only
    toolchains, the ``/etc`` files they get a copy of and their relay: the same for each of its
    Trials, and milliseconds each to work out (the cgroup mounts read, the install paths resolved;
    the C relay built, once per machine)."""

    memory_caps: memory.MemoryCaps
    memory_limit: int
    pids_caps: pids.PidsCaps
    pids_limit: int
    file_size: int
    disk_caps: disk.DiskCaps
    disk_limit: int
    toolchains: tuple[str, ...]
    etc_files: tuple[Path, ...]
    relay: relays.Relay

    @classmethod
    def of(cls, backend: BwrapBackend) -> Settled:
        return cls(
            backend.memory_caps or memory.detect(), backend.memory_limit or memory.default_limit(),
            backend.pids_caps or pids.detect(), backend.pids_limit or pids.default_limit(),
            backend.file_size or limits.file_size_limit(), backend.disk_caps or disk.detect(),
            backend.disk_limit or disk.default_limit(), tuple(mounts.toolchains()), tuple(mounts.etc_files()),
            backend.relay or relays.chosen(),
        )


def _wind_down(cap: TrialLimits, staged: disk.Staged, folders: Sequence[Path]) -> str:
    """After a run (one thread hop for all of it): its limits removed, what it left put back in its
    folders (when cancelled too: the Trial's work is kept) and made harmless, each even if one
    before it failed; the notes :meth:`disk.Staged.finish` gives."""
    try:
        cap.remove()
    finally:
        try:
            notes = staged.finish()
        finally:
            residue.defuse(folders)
    return notes


def _forget(layered: dict[Path, Path], sources: Mapping[Path, Path]) -> None:
    for folder in sources:
        layered.pop(folder, None)


def _signal_session(tree: ProcessTree, signum: int) -> None:
    """Signal the session's process group, which bwrap's child leads (``--new-session``).

    That child is the relay, PID 1 inside, which ignores it; the command and what it started
    in its group get it, as from a terminal's Ctrl-C.
    """
    for proc in tree.known.values():
        if proc.ppid == tree.leader and not proc.zombie:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pgid, signum)


def own_folders(invocation: Invocation) -> list[Path]:
    """The writable folders that belong to this session alone (inside its own folder, ``log_dir``
    or its work folder's parent): only these are written on its capped disk. A folder it shares
    with sessions running beside it is bound as it is: under a layer of this one's, what each wrote
    there would reach the others only once it ended, and a file both wrote would be this one's."""
    own = Path(os.path.abspath(invocation.log_dir or invocation.cwd.parent))
    return [p for p in invocation.read_write if own == Path(os.path.abspath(p)) or own in Path(os.path.abspath(p)).parents]


def _reading(result: ProcessResult, handshake: Handshake, *, capped: bool,
             refused: Sequence[tuple[str, str]] = ()) -> ProcessResult:
    """The command's own exit status (not bwrap's), and the sandbox's void cause if there is one.

    Nothing inside can kill the relay (PID 1 of its namespace), so a sandbox that ends without its
    exit report was killed from outside; a command that killed itself is the Arm's doing. A host of
    its provider the proxy refused (``refused``) means it could not reach its provider.
    """
    if handshake.exit_code() is not None:
        result = attrs.evolve(result, exit_code=handshake.exit_code())
    if handshake.failure:
        result = attrs.evolve(result, stderr_tail=f"{result.stderr_tail}{handshake.failure}\n")
    if handshake.broken:  # a malformed report: nothing it says can be trusted
        return attrs.evolve(result, void_cause=VoidCause.SANDBOX_FAILED)
    if capped:
        return attrs.evolve(result, void_cause=VoidCause.MEMORY_CAP)
    if refused:
        target, why = refused[0]
        return attrs.evolve(result, void_cause=VoidCause.PROVIDER_UNREACHABLE, timed_out=False, stderr_tail=(
            f"{result.stderr_tail}assay sandbox: the proxy refused {target} ({why}), a host of the Harness's "
            "provider: the session could not reach its provider\n"))
    if not handshake.started and not result.timed_out:  # bwrap, the cap or the relay failed to set up
        return attrs.evolve(result, void_cause=VoidCause.SANDBOX_FAILED)
    if handshake.exit_code() is None and not result.timed_out:  # the relay (PID 1) or bwrap killed from outside
        return attrs.evolve(result, void_cause=VoidCause.HOST_KILL)
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

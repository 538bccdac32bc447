"""Attacks from inside a bwrap Trial on what the host trusts (issue 14, findings 4-6), made for real.

Each test runs hostile code as the Trial's command and asserts the host is untouched. Tests
that need bwrap skip with the reason its check gives; a test of a limit this machine can't
enforce skips with the reason ``assay sandbox check`` reports it missing.
"""

from __future__ import annotations

import functools
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio
from assay.hooks.protocols import Invocation, ProcessResult
from assay.plugins.sandbox_bwrap import broker, disk, pids, relays, residue, seccomp
from assay.plugins.sandbox_bwrap.backend import PROXY_LOG, BwrapBackend, _reading
from assay.plugins.sandbox_bwrap.handshake import Handshake
from assay.storage.files import read_lines
from assay.storage.records import VoidCause

from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS, make_process_suite
from tests.sandbox_fixtures import RELAYS, netns_unavailable, own, processes_running, remote_server, with_relay

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


@pytest.fixture(params=RELAYS)
def each_relay(request: pytest.FixtureRequest, bwrap: BwrapBackend) -> BwrapBackend:
    """The bwrap backend with each relay in turn: both keep the contract (relays.py)."""
    return with_relay(bwrap, request.param)


@pytest.fixture
def trial(tmp_path: Path) -> Path:
    """A Trial folder with its repository (the command's working folder) and home."""
    (tmp_path / "trial" / "repo").mkdir(parents=True)
    (tmp_path / "trial" / "home").mkdir()
    return tmp_path / "trial"


def attack(
    backend: BwrapBackend, trial: Path, code: str, *, timeout: float = 60, hosts: tuple[str, ...] = ()
) -> tuple[ProcessResult, list[str]]:
    """Run ``code`` (Python) as the Trial's command; its stdout lines and the result."""
    lines: list[str] = []
    invocation = Invocation(
        argv=(sys.executable, "-c", textwrap.dedent(code)), cwd=trial / "repo",
        env={"PATH": "/usr/bin:/bin", "HOME": str(trial / "home")},
        read_write=(trial / "repo", trial / "home"), hosts=hosts, log_dir=trial,
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


# --- Finding 4: set-uid files and device nodes -----------------------------------------------------


def privileged(root: Path) -> list[Path]:
    """Every set-uid/set-gid file or folder and every device node under ``root``."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if mode & (stat.S_ISUID | stat.S_ISGID) and not path.is_symlink() or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            found.append(path)
    return found


SETUID = """
    import os, shutil, stat
    shutil.copy("/usr/bin/true", "suid")
    os.chmod("suid", 0o4755)
    shutil.copy("/usr/bin/true", os.path.join(os.environ["HOME"], "sgid"))
    os.chmod(os.path.join(os.environ["HOME"], "sgid"), 0o2711)  # not even readable
    os.makedirs("deep/er")
    os.chmod("deep/er", 0o2755)
    os.symlink("/usr/bin/passwd", "link")  # a link to a real set-uid binary: left alone
    try:
        os.mknod("null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        print("mknod worked", flush=True)
    except OSError as e:
        print("mknod", type(e).__name__, flush=True)
    print("modes", oct(os.stat("suid").st_mode), flush=True)
"""


def test_a_trial_leaves_no_set_uid_file_on_the_host(bwrap: BwrapBackend, trial: Path) -> None:
    """Finding 4: a ``chmod 4755`` (or 2755, or a set-gid folder) made in the Trial keeps no such bit
    on the host once the Trial is over, and the Trial can't make device nodes at all."""
    passwd = _mode("/usr/bin/passwd")
    result, lines = attack(bwrap, trial, SETUID)
    assert result.exit_code == 0 and result.void_cause is None, result.stderr_tail
    assert lines == ["mknod PermissionError", f"modes {oct(0o104755)}"]
    assert privileged(trial) == []
    assert (trial / "repo" / "suid").stat().st_mode & 0o7777 == 0o755
    assert (trial / "home" / "sgid").stat().st_mode & 0o7777 == 0o711
    assert (trial / "repo" / "link").is_symlink() and _mode("/usr/bin/passwd") == passwd  # no link followed


def _mode(path: str) -> int | None:
    return os.stat(path).st_mode if os.path.exists(path) else None


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make device nodes to clear")
def test_device_nodes_left_in_a_trials_folder_are_removed(tmp_path: Path) -> None:
    """Finding 4: no device node a Trial's folder holds survives the Trial (the host makes them here,
    as root, since nothing in the sandbox can)."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    os.mknod(tmp_path / "a" / "b" / "disk", 0o600 | stat.S_IFBLK, os.makedev(7, 0))
    os.mknod(tmp_path / "a" / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mkfifo(tmp_path / "a" / "fifo")
    defused = residue.defuse([tmp_path / "a"])
    assert sorted(p.name for p in defused.removed) == ["disk", "null"]
    assert privileged(tmp_path) == [] and (tmp_path / "a" / "fifo").exists()


HOSTILE_RUNNER = """
import json, os, shutil
request = json.loads(open(os.environ["ASSAY_REQUEST"]).read())
shutil.copy("/usr/bin/true", "suid")
os.chmod("suid", 0o4755)
with open(os.path.join(request["output_dir"], "result.json"), "w") as out:
    out.write(json.dumps({"version": 1, "outcome": "delivered"}))
"""


@pytest.mark.slow
def test_an_experiments_folder_is_private_and_holds_no_set_uid_file(
    bwrap: BwrapBackend, tmp_path: Path, assay_home: Path
) -> None:
    """Finding 4, whole CLI: after an Experiment whose Trials ``chmod 4755`` a file, nothing under
    ASSAY_HOME is set-uid, and the experiments folder and the Experiment's own are 0700."""
    make_process_suite(assay_home, tasks=1)
    manifests = []
    for name in ("one", "two"):  # two Arms must differ
        (tmp_path / name).mkdir()
        (tmp_path / name / "runner.py").write_text(f"# {name}\n{HOSTILE_RUNNER}")
        manifests.append(tmp_path / name / f"{name}.toml")
        manifests[-1].write_text('command = ["python3", "{runner_dir}/runner.py"]\n[files]\n"runner.py" = "runner_dir"\n')
    result = run_cli(
        assay_home, "experiment", "--suite", "proc", "--baseline-runner", str(manifests[0]), "--candidate-runner",
        str(manifests[1]), "--trials-per-task", "1", "--sandbox", "bwrap", "--json", plugins=PLUGINS, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    [experiment] = (assay_home / "evals" / "experiments").iterdir()
    assert len(list(experiment.glob("trials/*/*/attempt-0/repo/suid"))) == 2
    assert privileged(assay_home) == []
    assert stat.S_IMODE(experiment.stat().st_mode) == stat.S_IMODE(experiment.parent.stat().st_mode) == 0o700


# --- Finding 5: the relay's report pipe -------------------------------------------------------------


def test_the_trial_cannot_reach_the_relays_report_pipe(each_relay: BwrapBackend, trial: Path, victim: int) -> None:
    """Finding 5: the report fd named in /proc/1/cmdline can't be opened through /proc/1/fd, the
    relay can't be ptraced, the command holds no descriptor of the sandbox's; so a forged
    ``child-pid`` can't move a host process into the Trial's cgroup or raise its oom_score_adj."""
    before = Path(f"/proc/{victim}/cgroup").read_text(), Path(f"/proc/{victim}/oom_score_adj").read_text()
    code = f"""
        import ctypes, os
        args = open("/proc/1/cmdline", "rb").read().split(b"\\0")
        report = int(args[next(i for i, a in enumerate(args) if a.startswith(b"/run/assay/relay")) + 1])
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
    result, lines = attack(each_relay, trial, code)
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
    assert handshake.started and handshake.exit_code() == 3 and not handshake.broken


@pytest.mark.parametrize("line", [b"{not json\n", b'["child-pid"]\n', b"exit zero\n", b"exit --5\n", b"hello\n",
                                  b"x" * 5000])
def test_a_malformed_report_fails_the_sandbox_not_the_experiment(line: bytes) -> None:
    """Finding 5: a malformed line is a sandbox failure of that Trial, never an exception."""
    handshake, _ = reports(b"started\n", line)
    assert handshake.broken and "malformed" in handshake.failure


def test_a_malformed_report_makes_the_trial_void_sandbox_failed() -> None:
    """Finding 5: the backend reads a broken handshake as a Void Trial (``sandbox_failed``)."""
    handshake, _ = reports(b"started\n", b"exit 0\n", b"{oops\n")
    result = _reading(ProcessResult(exit_code=0, backend="bwrap", duration=1.0), handshake, capped=False)
    assert result.void_cause is VoidCause.SANDBOX_FAILED and "malformed" in result.stderr_tail


# --- Finding 6: limits a Run's machine would notice ----------------------------------------------------


FORK_BOMB = """
    import os, subprocess, time
    forked = 0
    try:
        while forked < 400:  # bounded, should the limit fail to hold
            if os.fork() == 0:
                os.execv("/usr/bin/sleep", ["sleep", "{token}"])
            forked += 1
        print("unbounded", forked, flush=True)
    except OSError as e:
        print("stopped", forked, e.errno, flush=True)
"""


def test_a_fork_bomb_fills_the_trials_process_limit_not_the_hosts(bwrap: BwrapBackend, trial: Path) -> None:
    """Finding 6: forks past the Trial's pids limit fail (EAGAIN), the Trial's stderr says it reached
    the limit, and nothing outlives the Trial."""
    caps = pids.detect()
    if caps.parent is None:
        pytest.skip(f"no pids cgroup here ({caps.describe(64)}); the rlimit fallback needs a non-root user")
    token = f"300.{os.getpid()}"
    result, lines = attack(attrs.evolve(bwrap, pids_limit=64), trial, FORK_BOMB.replace("{token}", token))
    assert result.exit_code == 0 and result.void_cause is None, result.stderr_tail
    verdict, forked, *errno = lines[0].split()
    assert verdict == "stopped" and errno == ["11"] and 50 < int(forked) < 64  # the relay and python count too
    assert "the Trial reached its process limit" in result.stderr_tail
    assert processes_running("sleep", token) == []
    assert own(caps.parent, "assay-trial-") == set()  # its cgroup went with it


def test_odd_socket_families_are_refused_inside(bwrap: BwrapBackend, trial: Path) -> None:
    """Finding 6: AF_VSOCK (the VM's port space, past the network namespace), AF_ALG and AF_PACKET
    fail with EAFNOSUPPORT under the seccomp filter; the families a session needs still work.
    Issue 30: 'socket families other than AF_UNIX/AF_INET/AF_INET6 are refused', AF_NETLINK too."""
    if not seccomp.supported():
        pytest.skip(f"no seccomp filter here: {seccomp.why_not()}")
    code = """
        import socket
        for name, kind in [("AF_UNIX", "SOCK_STREAM"), ("AF_INET", "SOCK_STREAM"), ("AF_INET6", "SOCK_DGRAM"),
                           ("AF_NETLINK", "SOCK_RAW"), ("AF_VSOCK", "SOCK_STREAM"), ("AF_ALG", "SOCK_SEQPACKET"),
                           ("AF_PACKET", "SOCK_RAW")]:
            try:
                socket.socket(getattr(socket, name), getattr(socket, kind)).close()
                print(name, "made", flush=True)
            except OSError as e:
                print(name, e.errno, flush=True)
    """
    result, lines = attack(bwrap, trial, code)
    assert result.exit_code == 0, result.stderr_tail
    assert lines == ["AF_UNIX made", "AF_INET made", "AF_INET6 made", "AF_NETLINK 97",
                     "AF_VSOCK 97", "AF_ALG 97", "AF_PACKET 97"]


TUNNEL = """
    import os, socket
    proxy = os.environ["HTTPS_PROXY"].removeprefix("http://").split(":")
    with socket.create_connection((proxy[0], int(proxy[1])), timeout=10) as s:
        s.sendall(b"CONNECT {target} HTTP/1.1\\r\\n\\r\\n")
        print(s.makefile("rb").readline().decode().split()[1], flush=True)
"""


def test_an_allowed_name_that_resolves_to_a_private_address_is_refused(bwrap: BwrapBackend, trial: Path) -> None:
    """Finding 6: the proxy refuses an allowed provider name that resolves into a private range
    (here 198.18/15, a server in a network namespace of its own) unless that host is configured
    as a private provider (``ASSAY_PRIVATE_HOSTS``)."""
    why = netns_unavailable()
    if why:
        pytest.skip(why)
    with remote_server(port=8444) as remote:
        target = f"gateway.test:{remote.port}"
        backend = attrs.evolve(bwrap, hosts_file={"gateway.test": [remote.address]})
        code = TUNNEL.replace("{target}", target)
        refused, lines = attack(attrs.evolve(backend, private_hosts=()), trial, code, hosts=(target,))
        assert lines == ["403"], refused.stderr_tail
        [entry] = read_lines(trial / PROXY_LOG)
        assert entry["allowed"] is False and "private address" in entry["reason"]
        allowed, lines = attack(attrs.evolve(backend, private_hosts=(target,)), trial, code, hosts=(target,))
        assert lines == ["200"], allowed.stderr_tail


DISK_FILL = """
    import os
    open("kept.txt", "w").write("work before the fill\\n")
    written = 0
    try:
        for n in range(64):  # bounded: 512 MiB, should the cap fail to hold
            with open(f"fill-{n}", "wb") as out:
                for _ in range(8):
                    out.write(bytes(1 << 20))
                    out.flush()
                    os.fsync(out.fileno())
                    written += 1
        print("unbounded", written, flush=True)
    except OSError as e:
        print("stopped", e.errno, flush=True)
"""


def test_a_disk_fill_stops_at_the_trials_disk_cap(bwrap: BwrapBackend, trial: Path) -> None:
    """Finding 6: many files, each under the file-size cap, fill the Trial's own file system
    (ENOSPC), not the host's; the Trial's work comes back to its folder, and the Trial's stderr
    says it filled its cap."""
    caps = disk.detect()
    if not caps.in_force:
        pytest.skip(caps.describe(64 << 20))
    before = _disks()
    result, lines = attack(attrs.evolve(bwrap, disk_limit=64 << 20), trial, DISK_FILL)
    assert lines == ["stopped 28"], result.stderr_tail  # ENOSPC
    assert "filled its disk cap" in result.stderr_tail
    assert (trial / "repo" / "kept.txt").read_text() == "work before the fill\n"
    assert sum(f.stat().st_size for f in (trial / "repo").iterdir()) <= 64 << 20
    assert _disks() <= before  # its file system is unmounted and gone


def _disks() -> set[Path]:
    return own(Path(tempfile.gettempdir()), disk.PREFIX)


def test_a_killed_runs_trial_disk_is_unmounted_by_the_next_trial(tmp_path: Path) -> None:
    """Issue 16: what a dead run left is swept by the next. A killed run's Trial file system stays
    mounted (and its image on the host's disk) until a later Trial starts and removes it."""
    caps = disk.detect()
    if not caps.in_force:
        pytest.skip(caps.describe(16 << 20))
    (tmp_path / "work").mkdir()

    def trial_disk(end: str) -> Path:  # a run of its own: this one sweeps only once
        started = subprocess.run(
            [sys.executable, "-c", "import sys; from pathlib import Path; from assay.plugins.sandbox_bwrap import disk; "
             f"s = disk.DiskCaps('loop ext4').start(16 << 20, [Path(sys.argv[1])]); print(s.root); {end}",
             str(tmp_path / "work")], capture_output=True, text=True, check=True)
        return Path(started.stdout.strip())

    left = trial_disk("")  # exits without finish(), as a killed run does
    assert os.path.ismount(left / "mnt")
    finished = trial_disk("s.finish()")
    assert not left.exists() and not finished.exists()


def _caps_here(limit: int) -> disk.DiskCaps:
    caps = disk.detect()
    if not caps.in_force:
        pytest.skip(caps.describe(limit))
    return caps


def test_the_next_trial_gets_the_same_file_system_emptied(tmp_path: Path) -> None:
    """Issue 39: making and mounting a Trial's file system cost most of the disk cap; one
    backend's next Trial now gets the last one's, emptied. The cap is the same, and nothing the
    first Trial wrote there is left for the second (its work went back to its own folder)."""
    caps, pool = _caps_here(16 << 20), disk.Pool()
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "task.txt").write_text(folder.name)
    staged = caps.start(16 << 20, [first], pool)
    root = staged.root
    [inside] = staged.sources.values()
    (inside / "left-by-first").mkdir()
    (inside / "left-by-first" / "secret").write_text("first's")
    assert staged.finish() == ""
    assert (first / "left-by-first" / "secret").read_text() == "first's"  # the work is the Trial's
    assert pool.idle == {16 << 20: [root]}
    again = caps.start(16 << 20, [second], pool)
    assert again.root == root and pool.idle == {16 << 20: []}
    [inside] = again.sources.values()
    assert [p.name for p in (root / "mnt").iterdir()] == [inside.name]
    assert sorted(p.name for p in inside.iterdir()) == ["task.txt"]
    assert os.statvfs(inside).f_blocks * os.statvfs(inside).f_frsize <= 16 << 20
    again.finish()
    pool.idle.clear()
    disk.remove(root)


def test_a_file_system_a_trial_filled_or_crowded_is_removed_not_reused(tmp_path: Path, monkeypatch) -> None:
    """Emptying costs what the Trial wrote; past REUSE_FILES (or a filled cap) the file system
    goes instead, which costs the same little whatever it holds."""
    caps, pool = _caps_here(16 << 20), disk.Pool()
    monkeypatch.setattr(disk, "REUSE_FILES", 50)
    (tmp_path / "work").mkdir()
    staged = caps.start(16 << 20, [tmp_path / "work"], pool)
    root = staged.root
    [inside] = staged.sources.values()
    for i in range(60):
        (inside / f"f{i}").write_text("x")
    staged.finish()
    assert pool.idle == {} and not root.exists()
    assert len(list((tmp_path / "work").iterdir())) == 60


def test_the_pool_goes_with_the_process(tmp_path: Path) -> None:
    """What the pool holds is unmounted and removed as the process that made it ends."""
    _caps_here(16 << 20)
    (tmp_path / "work").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; from assay.plugins.sandbox_bwrap import disk; "
         "pool = disk.Pool(); s = disk.DiskCaps('loop ext4').start(16 << 20, [Path(sys.argv[1])], pool); "
         "s.finish(); print(pool.idle[16 << 20][0])", str(tmp_path / "work")],
        capture_output=True, text=True, check=True)
    root = Path(done.stdout.strip())
    assert root.name.startswith(disk.PREFIX) and not root.exists()


def test_a_disk_fill_in_one_file_stops_at_the_file_size_cap(bwrap: BwrapBackend, trial: Path) -> None:
    """Finding 6 (partly: the only disk limit so far is per file): writing past the Trial's file-size
    cap fails (EFBIG; a program that doesn't ignore SIGXFSZ, as Python does, is killed by it), so
    the file on the host stops at the cap and the Trial fails."""
    code = """
        print("writing", flush=True)
        with open("fill", "wb") as out:
            for _ in range(64):
                out.write(bytes(1 << 20))
        print("wrote it all", flush=True)
    """
    result, lines = attack(attrs.evolve(bwrap, file_size=8 << 20), trial, code)
    assert lines == ["writing"] and result.exit_code == 1 and result.void_cause is None
    assert "OSError: [Errno 27] File too large" in result.stderr_tail
    assert (trial / "repo" / "fill").stat().st_size <= 8 << 20


# --- What `assay sandbox check` says of the limits -------------------------------------------------


def test_sandbox_check_reports_each_limit_and_which_are_missing_here(assay_home: Path) -> None:
    """Acceptance: ``assay sandbox check --json`` reports each limit (pids, disk, memory, seccomp), in
    force or missing on this machine, as detection here finds it. Issue 30: '`assay sandbox check
    --json` reports the broker and the seccomp mode in force'."""
    result = run_cli(assay_home, "sandbox", "check", "--json")
    rows = {row["name"]: row for row in json.loads(result.stdout)["backends"]}
    bwrap = rows["bwrap"]
    assert set(bwrap["limits"]) == {"memory", "pids", "disk", "seccomp", "broker", "relay"}
    assert bwrap["limits"]["relay"] == {"in_force": True, "how": relays.chosen().describe()}
    assert bwrap["limits"]["pids"]["in_force"] is pids.detect().in_force
    assert bwrap["limits"]["seccomp"]["in_force"] is seccomp.supported()
    if seccomp.supported():
        assert bwrap["limits"]["seccomp"]["how"].startswith("allowlist of ")
    assert bwrap["limits"]["broker"] == {"in_force": True, "how": broker.DESCRIPTION}
    assert bwrap["limits"]["memory"]["how"] == bwrap["memory_cap"]
    assert bwrap["missing"] == [name for name, limit in sorted(bwrap["limits"].items()) if not limit["in_force"]]
    assert bwrap["limits"]["disk"]["in_force"] is disk.detect().in_force
    assert "each file at most" in bwrap["limits"]["disk"]["how"]
    assert sorted(rows["none"]["missing"]) == ["broker", "disk", "memory", "pids", "seccomp"]
    shown = run_cli(assay_home, "sandbox", "check").stdout
    assert f"bwrap pids: {'in force' if pids.detect().in_force else 'MISSING'}" in shown
    assert f"bwrap disk: {'in force' if disk.detect().in_force else 'MISSING'}" in shown
    assert f"bwrap relay: in force, {relays.chosen().describe()}" in shown


@pytest.mark.parametrize("root, kind", [(True, "none"), (False, "rlimit nproc")])
def test_without_a_pids_cgroup_the_fallback_depends_on_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root: bool, kind: str
) -> None:
    """Finding 6: with no pids cgroup, RLIMIT_NPROC in the Trial's user namespace, except as root
    (where the kernel never enforces it), which ``sandbox check`` reports missing."""
    (tmp_path / "mountinfo").write_text("")
    (tmp_path / "cgroup").write_text("0::/\n")
    monkeypatch.setattr(os, "geteuid", lambda: 0 if root else 1000)
    caps = pids.detect(tmp_path)
    assert caps.kind == kind and caps.in_force is not root


@pytest.mark.slow
def test_a_writable_folder_shared_by_two_sessions_is_not_wiped_when_one_ends(bwrap: BwrapBackend, tmp_path: Path) -> None:
    """Finding 6's disk cap moves a session's writable folders onto its own file system and back
    when it ends; a folder two sessions share (a Harness's, outside each Trial's folder) must not
    move, or the first to end wipes what the other is still reading and writing."""
    caps = disk.detect()
    if not caps.in_force:
        pytest.skip(caps.describe(64 << 20))
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "config.json").write_text("{}")
    code = """
        import sys, time
        from pathlib import Path
        shared = Path(sys.argv[1])
        (shared / (sys.argv[2] + ".txt")).write_text("mine")
        time.sleep(float(sys.argv[3]))
        print((shared / "config.json").read_text(), sorted(p.name for p in shared.iterdir()), flush=True)
    """
    outputs: dict[str, list[str]] = {"short": [], "long": []}

    async def both() -> None:
        async with trio.open_nursery() as nursery:
            for name, seconds in (("short", "0.5"), ("long", "4")):
                folder = tmp_path / name
                (folder / "repo").mkdir(parents=True)
                invocation = Invocation(
                    argv=(sys.executable, "-c", textwrap.dedent(code), str(shared), name, seconds), cwd=folder / "repo",
                    env={"PATH": "/usr/bin:/bin"}, read_write=(folder / "repo", shared), log_dir=folder)
                nursery.start_soon(functools.partial(attrs.evolve(bwrap, disk_limit=64 << 20).run, invocation,
                                                     timeout=60, on_line=outputs[name].append))

    trio.run(both)
    assert outputs["long"] == ["{} ['config.json', 'long.txt', 'short.txt']"], outputs
    assert sorted(p.name for p in shared.iterdir()) == ["config.json", "long.txt", "short.txt"]

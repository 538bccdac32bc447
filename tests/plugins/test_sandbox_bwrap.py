"""The bwrap sandbox, run for real: what a Trial sees and reaches, its memory cap, and what it leaves.

Tests that need bwrap skip themselves, with the reason the backend's own check gives, where it
can't run; those that need a network namespace skip where none can be made. The proxy, memory
detection and check tests run everywhere.
"""

from __future__ import annotations

import functools
import gc
import ipaddress
from datetime import datetime
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import assay
import attrs
import pytest
import trio
from assay.hooks.protocols import Brokered, Invocation, ProcessResult
from assay.plugins.sandbox_bwrap import memory
from assay.plugins.sandbox_bwrap.backend import PROXY_LOG, BwrapBackend
from assay.plugins.sandbox_bwrap.mounts import installs
from assay.plugins.sandbox_bwrap.proxy import Allowlist, Proxy, Sockets, own_addresses, refusal, resolver
from assay.sessions import proctree
from assay.sessions.logins import FixedLogin
from assay.storage.files import read_lines
from assay.storage.records import VoidCause

from tests.conftest import OOM_KILLS, run_cli
from tests.experiment_fixtures import PLUGINS, make_factory, make_process_suite, make_runner, make_suite, scenario
from tests.sandbox_fixtures import (
    RELAYS, Remote, netns_unavailable, own, processes_running, processes_where, remote_server, with_relay,
)

BACKEND = BwrapBackend(grace=0.5, poll=0.05, drain=1.0)


@functools.cache
def bwrap_check():
    return BACKEND.check()


@pytest.fixture
def bwrap() -> BwrapBackend:
    check = bwrap_check()
    if not check.works:
        pytest.skip(f"bwrap can't run here: {check.reason}")
    return BACKEND


@pytest.fixture(params=RELAYS)
def each_relay(request: pytest.FixtureRequest, bwrap: BwrapBackend) -> BwrapBackend:
    """The bwrap backend with each relay in turn: both keep the contract (relays.py)."""
    return with_relay(bwrap, request.param)


@pytest.fixture(scope="module")
def remote() -> Iterator[Remote]:
    why = netns_unavailable()
    if why:
        pytest.skip(why)
    with remote_server() as server:
        yield server


def cgroup_caps() -> memory.MemoryCaps:
    caps = memory.detect()
    if caps.parent is None:
        pytest.skip("no writable cgroup here: under the data-limit fallback a cap can't be told from a crash")
    return caps


@attrs.frozen
class World:
    """One Trial's folder inside an ASSAY_HOME, beside another Trial's, with a secret in the home."""

    assay_home: Path
    trial: Path
    repo: Path
    home: Path
    other_answer: Path
    secret: Path


@pytest.fixture
def world(assay_home: Path) -> World:
    trials = assay_home / "evals" / "experiments" / "e1" / "trials" / "t1"
    trial = trials / "candidate-0" / "attempt-0"
    (trial / "repo").mkdir(parents=True)
    (trial / "home").mkdir()
    other = trials / "baseline-0" / "attempt-0" / "repo" / "answer.txt"
    other.parent.mkdir(parents=True)
    other.write_text("the answer\n")
    secret = assay_home / "credentials.toml"
    secret.write_text('claude = "token"\n')
    return World(assay_home, trial, trial / "repo", trial / "home", other, secret)


def run(
    backend: BwrapBackend, world: World, code: str, *, timeout: float = 30, hosts: tuple[str, ...] = (),
    read_only: tuple[Path, ...] = (), argv: tuple[str, ...] | None = None,
    on_line: Callable[[str], None] | None = None,
) -> tuple[ProcessResult, list[str]]:
    lines: list[str] = []

    def seen(line: str) -> None:
        lines.append(line)
        if on_line:
            on_line(line)

    invocation = Invocation(  # none of its hosts is a provider's: a refusal leaves it running
        argv=argv or (sys.executable, "-c", textwrap.dedent(code)), cwd=world.repo,
        env={"PATH": "/usr/bin:/bin", "HOME": str(world.home)}, read_write=(world.repo, world.home),
        read_only=read_only, hosts=hosts, provider_hosts=(), log_dir=world.trial,
    )
    return trio.run(functools.partial(backend.run, invocation, timeout=timeout, on_line=seen)), lines


# --- What a Trial sees ---------------------------------------------------------------------------


def test_a_trial_sees_its_own_paths_and_nothing_else(bwrap: BwrapBackend, world: World, tmp_path: Path) -> None:
    given = tmp_path / "factory-build" / "skill.md"
    given.parent.mkdir()
    given.write_text("a skill\n")
    home = Path.home()
    code = f"""
        import json, os
        def readable(path):
            try:
                return open(path).read()
            except OSError:
                return None
        def writable(path):
            try:
                open(path, "a").close()
                return True
            except OSError:
                return False
        open("made-inside.txt", "w").write("from the Trial\\n")
        print(json.dumps({{
            "secret": readable({str(world.secret)!r}), "other": readable({str(world.other_answer)!r}),
            "assay_home": sorted(os.listdir({str(world.assay_home)!r})),
            "real_home": sorted(os.listdir({str(home)!r})),
            "source": os.path.exists({str(Path(assay.__file__).parent)!r}),
            "given": readable({str(given)!r}), "given_writable": writable({str(given)!r}),
            "tmp": os.listdir("/tmp"), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "oom_score_adj": readable("/proc/self/oom_score_adj").strip(),
            "capabilities": [line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff")],
            "proxy": os.environ["HTTPS_PROXY"],
        }}))
    """
    result, lines = run(bwrap, world, code, read_only=(given,))
    assert result.exit_code == 0 and result.void_cause is None and result.backend == "bwrap", result.stderr_tail
    seen = json.loads(lines[-1])
    assert seen["secret"] is None and seen["other"] is None
    assert seen["assay_home"] == ["evals"]  # only the folders leading to this Trial's repository
    assert set(seen["real_home"]) <= {root.relative_to(home).parts[0] for root in installs() if home in root.parents}
    assert seen["source"] is False
    assert seen["given"] == "a skill\n" and seen["given_writable"] is False
    # A fresh /tmp: only the folders leading to bound paths, the Python running assay among them
    # when its venv lives under /tmp (issue 17: this failed for a venv made in /tmp).
    leading = {path.relative_to("/tmp").parts[0] for path in (world.repo, given, *installs()) if Path("/tmp") in path.parents}
    assert set(seen["tmp"]) <= leading
    assert len(seen["pids"]) == 2  # the relay and this process: no host process
    assert seen["oom_score_adj"] == "1000" and seen["capabilities"] == ["0000000000000000"]
    assert seen["proxy"] == "http://127.0.0.1:3128"
    assert (world.repo / "made-inside.txt").read_text() == "from the Trial\n"


def test_what_only_its_owner_may_read_in_a_bound_etc_folder_is_hidden(bwrap: BwrapBackend, tmp_path: Path) -> None:
    """A hostile review's finding: /etc/ssl is bound whole, and a Trial runs as the user running
    assay, so under root it read /etc/ssl/private (TLS keys). What in a bound /etc folder others may
    not read is hidden (mounts.masks), and a private plain /etc file is never copied in. Checked
    with bwrap itself, as root or not: a folder like /etc/ssl, its private key and public certs."""
    ssl = tmp_path / "ssl"
    (ssl / "certs").mkdir(parents=True)
    (ssl / "certs" / "ca.pem").write_text("public cert\n")
    (ssl / "private").mkdir(mode=0o700)
    (ssl / "private" / "host.key").write_text("PRIVATE KEY\n")
    (ssl / "secret.cnf").write_text("a password\n")
    (ssl / "secret.cnf").chmod(0o640)
    os.chmod(ssl / "private", 0o710)  # as /etc/ssl/private on Debian: root, group ssl-cert, no access for others
    read = ("import json, os, sys\n"
            "def show(p):\n"
            "    try:\n        return sorted(os.listdir(p)) if os.path.isdir(p) else open(p).read()\n"
            "    except OSError as e:\n        return type(e).__name__\n"
            "print(json.dumps([show(p) for p in sys.argv[1:]]))")
    paths = [str(ssl / "certs" / "ca.pem"), str(ssl / "private"), str(ssl / "private" / "host.key"), str(ssl / "secret.cnf")]

    def seen(*hide: str) -> list:
        argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--ro-bind", str(ssl), str(ssl), *hide,
                sys.executable, "-c", read, *paths]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    from assay.plugins.sandbox_bwrap.mounts import masks

    if os.geteuid() == 0:  # the hole itself: root reads what others may not
        assert seen() == ["public cert\n", ["host.key"], "PRIVATE KEY\n", "a password\n"]
    shown = seen(*masks(ssl))
    assert shown[0] == "public cert\n"  # what anyone may read is there
    assert shown[1] == [] and shown[2] == "FileNotFoundError"  # an empty folder over the private one
    assert shown[3] == "PermissionError"  # /dev/null bound without devices: nothing to read


def test_a_virtual_environment_shows_only_what_its_python_reads(bwrap: BwrapBackend, tmp_path: Path) -> None:
    """The same mechanism, asked what else it let in: the Python running assay is bound where it is
    installed, and a virtual environment's root may hold a pip.conf with a private index's token.
    Only its bin, lib, lib64 and pyvenv.cfg are shown; its Python still starts as that venv's."""
    import venv

    from assay.plugins.sandbox_bwrap.mounts import install_binds

    root = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    (root / "pip.conf").write_text("[global]\nindex-url = https://user:TOKEN@pypi.example/simple\n")
    look = f"import os, sys; print(sys.prefix, sorted(os.listdir({str(root)!r})))"
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", str(root), *install_binds(root),
            str(root / "bin" / "python"), "-c", look]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    prefix, _, listed = done.stdout.strip().partition(" ")
    assert prefix == str(root)  # its own venv, pyvenv.cfg read
    assert "pip.conf" not in listed and "pyvenv.cfg" in listed and "bin" in listed
    assert install_binds(Path(sys.base_prefix)) == ["--ro-bind", sys.base_prefix, sys.base_prefix]  # not a venv: whole


# --- What a Trial reaches ------------------------------------------------------------------------

CONNECT = """
import json, os, socket, sys
def attempt(address, port):
    try:
        socket.create_connection((address, port), timeout=5).close()
        return "connected"
    except OSError as e:
        return type(e).__name__ + ":" + str(e.errno)
"""


def test_the_hosts_loopback_is_out_of_reach(bwrap: BwrapBackend, world: World) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        result, lines = run(bwrap, world, CONNECT + f"print(attempt('127.0.0.1', {port}))")
    assert result.exit_code == 0, result.stderr_tail
    assert lines == ["ConnectionRefusedError:111"]  # the Trial's own loopback, with nothing on it


def test_no_address_is_reachable_directly(bwrap: BwrapBackend, world: World, remote: Remote) -> None:
    with socket.create_connection((remote.address, remote.port), timeout=5) as direct:
        assert direct.recv(100).startswith(b"hello")  # the host reaches it; the Trial must not
    result, lines = run(bwrap, world, CONNECT + f"print(attempt({remote.address!r}, {remote.port}))")
    assert result.exit_code == 0, result.stderr_tail
    assert lines == ["OSError:101"]  # ENETUNREACH: the Trial's network has no route at all


def test_the_proxy_reaches_an_allowed_host_and_refuses_the_rest(each_relay: BwrapBackend, world: World, remote: Remote) -> None:
    port = remote.port
    backend = attrs.evolve(each_relay, hosts_file={
        "provider.test": [remote.address], "elsewhere.test": [remote.address],
        "loopback.test": ["127.0.0.1"], "self.test": [remote.host_side],
    }, private_hosts=(f"provider.test:{port}", f"self.test:{port}"))  # 198.18/15 is private
    code = f"""
        import json, os, socket
        proxy = os.environ["HTTPS_PROXY"].removeprefix("http://").split(":")
        def tunnel(target):
            with socket.create_connection((proxy[0], int(proxy[1])), timeout=10) as s:
                s.sendall(f"CONNECT {{target}} HTTP/1.1\\r\\nHost: {{target}}\\r\\n\\r\\n".encode())
                reader = s.makefile("rb")
                status = reader.readline().decode().split()[1]
                while reader.readline() not in (b"\\r\\n", b""):
                    pass
                if status != "200":
                    return [status]
                greeting = reader.readline().decode().strip()
                s.sendall(b"ping\\n")
                return [status, greeting, reader.readline().decode().strip()]
        print(json.dumps({{name: tunnel(f"{{name}}:{port}") for name in
                          ("provider.test", "elsewhere.test", "loopback.test", "self.test")}}))
    """
    hosts = (f"provider.test:{port}", f"loopback.test:{port}", f"self.test:{port}")
    result, lines = run(backend, world, code, hosts=hosts)
    assert result.exit_code == 0, result.stderr_tail
    assert json.loads(lines[-1]) == {
        "provider.test": ["200", f"hello from {remote.address}", "ping"],
        "elsewhere.test": ["403"], "loopback.test": ["403"], "self.test": ["403"],
    }
    log = {entry["target"]: entry for entry in read_lines(world.trial / PROXY_LOG)}
    assert {t: e["allowed"] for t, e in log.items()} == {
        f"provider.test:{port}": True, f"elsewhere.test:{port}": False,
        f"loopback.test:{port}": False, f"self.test:{port}": False,
    }
    assert log[f"provider.test:{port}"]["address"] == remote.address
    assert "allowlist" in log[f"elsewhere.test:{port}"]["reason"]
    assert "loopback" in log[f"loopback.test:{port}"]["reason"]
    assert "own" in log[f"self.test:{port}"]["reason"]


# --- The relay (PID 1) ---------------------------------------------------------------------------

ASK = """
    import os, resource, signal, socket
    def ask():
        # The first bytes of the proxy's answer through the relay (a 405 to a plain GET), or closed.
        with socket.create_connection(("127.0.0.1", 3128), timeout=10) as s:
            s.sendall(b"GET http://example.invalid/ HTTP/1.1\\r\\nHost: example.invalid\\r\\n\\r\\n")
            try:
                return (s.recv(4) or b"closed").decode()
            except ConnectionResetError:
                return "closed"
"""
EXHAUST = {
    # The same user may lower PID 1's rlimits (prlimit checks no dumpable flag): no descriptor to spare.
    "descriptors": """
        soft, hard = resource.prlimit(1, resource.RLIMIT_NOFILE)
        resource.prlimit(1, resource.RLIMIT_NOFILE, (3, hard))
        print(ask(), flush=True)
        resource.prlimit(1, resource.RLIMIT_NOFILE, (soft, hard))
        print(ask(), flush=True)
    """,
    # Children fill the Trial's pids limit: no thread to spare.
    "tasks": """
        children = []
        while True:
            try:
                child = os.fork()
            except OSError:
                break
            if child == 0:
                signal.pause()
                os._exit(0)
            children.append(child)
        print(ask(), flush=True)
        for child in children:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        print(ask(), flush=True)
    """,
}


@pytest.mark.parametrize("exhausted", sorted(EXHAUST))
def test_the_relay_forwards_again_once_the_trial_gives_back_what_it_exhausted(
    each_relay: BwrapBackend, world: World, exhausted: str
) -> None:
    """A connection the relay has no descriptor or thread for is closed, and once the Trial gives
    them back the next is forwarded: the forwarder outlives the exhaustion, and says nothing."""
    backend = attrs.evolve(each_relay, pids_limit=64)
    if exhausted == "tasks" and not backend.settled().pids_caps.in_force:
        pytest.skip(f"no pids limit here: {backend.settled().pids_caps.describe(64)}")
    result, lines = run(backend, world, textwrap.dedent(ASK) + textwrap.dedent(EXHAUST[exhausted]))
    assert result.exit_code == 0 and result.void_cause is None, result.stderr_tail
    assert lines == ["closed", "HTTP"]
    assert result.stderr_tail in ("", "assay sandbox: the Trial reached its process limit\n")  # no traceback


def test_the_command_gets_the_environment_it_was_given(each_relay: BwrapBackend, world: World) -> None:
    """The Invocation's, with the proxy's variables and bwrap's PWD: not the Python relay's own
    LC_CTYPE=C.UTF-8 (Python's start coerces a C locale, PEP 538)."""
    result, lines = run(each_relay, world, "", argv=("env",))
    assert result.exit_code == 0, result.stderr_tail
    assert sorted(line.partition("=")[0] for line in lines) == sorted(
        ["PATH", "HOME", "PWD", "HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"])


# --- What a Trial leaves behind ------------------------------------------------------------------


def test_nothing_a_trial_starts_outlives_it(each_relay: BwrapBackend, world: World) -> None:
    token = f"300.{secrets.randbelow(10**6):06d}"
    code = f"""
        import os, subprocess, time
        subprocess.Popen(["sleep", "{token}"], start_new_session=True)
        child = os.fork()
        if child == 0:  # a daemon: double fork, own session, orphaned at once
            os.setsid()
            subprocess.Popen(["sleep", "{token}"], stdout=subprocess.DEVNULL)
            os._exit(0)
        os.waitpid(child, 0)
        wanted = b"sleep\\x00{token}\\x00"
        def running():
            found = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    found += [pid] if open(f"/proc/{{pid}}/cmdline", "rb").read() == wanted else []
                except OSError:
                    pass
            return found
        # Popen returns once exec has begun, a moment before the kernel shows the new command line.
        deadline = time.monotonic() + 10
        while len(running()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        print(f"spawned {{len(running())}}", flush=True)
    """
    result, lines = run(each_relay, world, code)
    assert result.exit_code == 0 and lines == ["spawned 2"], result.stderr_tail  # both running when it ended
    assert processes_running("sleep", token) == []


DAEMONS = """
    import os, subprocess, time
    subprocess.Popen(["sleep", "{token}"], start_new_session=True)
    if os.fork() == 0:  # a daemon: own session, orphaned at once
        os.setsid()
        subprocess.Popen(["sleep", "{token}"], stdout=subprocess.DEVNULL)
        os._exit(0)
    def running():
        found = 0
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                found += open(f"/proc/{{pid}}/cmdline", "rb").read() == b"sleep\\x00{token}\\x00"
            except OSError:
                pass
        return found
    deadline = time.monotonic() + 10
    while running() < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"running {{running()}}", flush=True)
    {then}
"""


def test_the_end_of_a_trials_pid_namespace_is_proof_enough_that_nothing_outlives_it(
    bwrap: BwrapBackend, world: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 39: once the relay (PID 1 of the Trial's namespace) has ended, so has everything the Trial
    started, so neither its end nor its run reads the process table (each read takes in every
    process on the machine: a real session's run read it twice a second)."""
    reads = []
    real = proctree.snapshot
    monkeypatch.setattr(proctree, "snapshot", lambda: reads.append(1) or real())
    token = f"300.{secrets.randbelow(10**6):06d}"
    result, lines = run(bwrap, world, DAEMONS.format(token=token, then="time.sleep(1)"))  # 20 polls
    assert result.exit_code == 0 and result.void_cause is None and lines == ["running 2"], result.stderr_tail
    assert reads == [] and processes_running("sleep", token) == []


def test_a_trial_whose_bwrap_is_killed_from_outside_leaves_nothing_running(each_relay: BwrapBackend, world: World) -> None:
    """bwrap SIGKILLed mid-Trial (by the OOM killer, say): its relay dies with it, and so the whole
    namespace, before the run returns; the Trial is a host kill."""
    token = f"300.{secrets.randbelow(10**6):06d}"

    start = [word.encode() for word in each_relay.settled().relay.argv()]

    def kill_bwrap(line: str) -> None:
        [relay] = processes_where(lambda argv: argv[:len(start)] == start and any(token.encode() in a for a in argv))
        os.kill(int(Path(f"/proc/{relay}/stat").read_text().rsplit(")", 1)[1].split()[1]), signal.SIGKILL)  # its parent

    result, lines = run(each_relay, world, DAEMONS.format(token=token, then="time.sleep(60)"), on_line=kill_bwrap)
    assert lines == ["running 2"] and result.void_cause is VoidCause.HOST_KILL and not result.timed_out, result
    assert processes_running("sleep", token) == []


def test_a_hang_gets_its_stop_signal_inside_at_the_timeout(each_relay: BwrapBackend, world: World) -> None:
    code = """
        import signal, sys, time
        def stop(signum, frame):
            print("stopping", flush=True)
            sys.exit(5)
        signal.signal(signal.SIGTERM, stop)
        print("ready", flush=True)
        time.sleep(60)
    """
    result, lines = run(each_relay, world, code, timeout=1)
    assert result.timed_out and result.void_cause is None
    assert lines == ["ready", "stopping"] and result.exit_code == 5  # the command's own status


def test_a_hang_that_ignores_its_stop_signal_is_killed(each_relay: BwrapBackend, world: World) -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    result, lines = run(each_relay, world, code, timeout=1)
    assert result.timed_out and lines == ["ready"]
    assert result.exit_code == -signal.SIGKILL and result.duration < 1 + BACKEND.grace + 5


def test_a_cancelled_trial_leaves_no_process_socket_or_cgroup(bwrap: BwrapBackend, world: World) -> None:
    token = f"300.{secrets.randbelow(10**6):06d}"
    caps = memory.detect()
    cgroups = own(caps.parent, "assay-trial-")
    folder = bwrap.sockets.folder()
    sockets = own(Path(tempfile.gettempdir()), "assay-proxy-") | {folder}
    code = f"import subprocess, time; subprocess.Popen(['sleep', '{token}']); print('ready', flush=True); time.sleep(60)"
    invocation = Invocation(argv=(sys.executable, "-c", code), cwd=world.repo, env={"PATH": "/usr/bin:/bin"},
                            read_write=(world.repo,), log_dir=world.trial)

    async def main() -> bool:
        with trio.fail_after(20), trio.CancelScope() as scope:
            await bwrap.run(invocation, timeout=60, on_line=lambda line: scope.cancel())
        return scope.cancelled_caught

    assert trio.run(main)
    assert processes_running("sleep", token) == []
    assert own(Path(tempfile.gettempdir()), "assay-proxy-") <= sockets
    assert list(folder.glob("*.sock")) == []  # its socket too, in the backend's own folder
    assert own(caps.parent, "assay-trial-") <= cgroups


def test_a_brokered_trial_gets_the_brokers_ca_beside_its_socket(bwrap: BwrapBackend, world: World) -> None:
    """With a credential broker, the sandbox also gets the broker's CA certificate (read-only, at the
    path its CLI is told to trust), and still nothing else of the backend's folder."""
    brokered = Brokered(FixedLogin({"token": "real-secret"}), {"stand-in": "token"}, ("broker.test",),
                        ca_variables=("SSL_CERT_FILE",))
    code = """
        import os
        path = os.environ['SSL_CERT_FILE']
        print(sorted(os.listdir('/run/assay/proxy')), path)
        print(open(path).read().strip().splitlines()[0])
        try:
            open(path, 'a')
        except OSError as e:
            print(type(e).__name__)
    """
    invocation = Invocation(argv=(sys.executable, "-c", textwrap.dedent(code)), cwd=world.repo,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(world.home)}, read_write=(world.repo, world.home),
                            hosts=("broker.test",), provider_hosts=(), log_dir=world.trial, broker=brokered)
    lines: list[str] = []
    result = trio.run(functools.partial(bwrap.run, invocation, timeout=30, on_line=lines.append))
    assert result.exit_code == 0, result.stderr_tail
    assert lines == ["['ca.pem', 'proxy.sock'] /run/assay/proxy/ca.pem", "-----BEGIN CERTIFICATE-----", "OSError"]
    assert (bwrap.sockets.folder() / "ca.pem").read_bytes() == bwrap.ca.pem()


def test_the_sockets_folder_is_made_again_with_its_files_when_something_removed_or_changed_it() -> None:
    """A /tmp cleaner may remove the folder, or its CA file alone, during a long Experiment; another
    user may put something in its place. The next Trial's socket and the broker's CA then go into a
    new folder, never into one that is gone or no longer this user's alone (which is left as it is)."""
    sockets = Sockets()
    first = sockets.holding("ca.pem", b"CA")
    first.unlink()
    assert sockets.holding("ca.pem", b"CA").read_bytes() == b"CA"
    shutil.rmtree(first.parent)
    second = sockets.holding("ca.pem", b"CA")
    assert second.parent != first.parent and second.read_bytes() == b"CA"
    second.parent.chmod(0o777)
    third = sockets.new().parent
    assert third not in (first.parent, second.parent) and second.parent.is_dir()
    shutil.rmtree(second.parent)  # not the backend's to remove any more: this test's
    assert sockets.holding("ca.pem", b"CA") == third / "ca.pem" and (third / "ca.pem").read_bytes() == b"CA"
    del sockets
    gc.collect()
    assert not third.exists()


def test_a_trial_sees_its_own_proxy_socket_alone_and_the_folder_goes_with_its_backend(
        bwrap: BwrapBackend, world: World) -> None:
    """The backend keeps its Trials' sockets in one folder: each sandbox is given its own socket,
    never the folder, so a Trial can't reach another running Trial's proxy (and its allowlist)."""
    backend = attrs.evolve(bwrap, sockets=Sockets())
    neighbour = backend.sockets.new()  # another Trial's, running beside this one
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(neighbour))
    try:
        result, lines = run(backend, world, f"""
            import os, socket
            print(sorted(os.listdir('/run/assay/proxy')), os.path.exists({str(neighbour)!r}))
            own = socket.socket(socket.AF_UNIX)
            own.connect('/run/assay/proxy/proxy.sock')
            own.sendall(b'CONNECT nowhere.test:443 HTTP/1.1\\r\\n\\r\\n')
            print(own.recv(12))
        """)
    finally:
        listener.close()
    assert result.exit_code == 0, result.stderr_tail
    assert lines == ["['proxy.sock'] False", "b'HTTP/1.1 403'"]  # its own proxy answers, refusing a host not on its list
    folder = backend.sockets.folder()
    assert sorted(p.name for p in folder.iterdir()) == [neighbour.name]  # the Trial's own socket is gone
    del backend
    gc.collect()
    assert not folder.exists()


# --- Memory ------------------------------------------------------------------------------------


@OOM_KILLS
def test_past_its_memory_cap_a_trial_is_killed_and_void(bwrap: BwrapBackend, world: World) -> None:
    caps = cgroup_caps()
    before = own(caps.parent, "assay-trial-")
    code = "print('start', flush=True); held = bytearray(512 << 20); print('survived', flush=True)"
    result, lines = run(attrs.evolve(bwrap, memory_limit=128 << 20), world, code)
    assert result.void_cause is VoidCause.MEMORY_CAP and not result.timed_out
    assert lines == ["start"]
    assert own(caps.parent, "assay-trial-") <= before  # the Trial's cgroup went with it


def test_a_trial_slows_at_a_soft_limit_below_its_cap_and_its_peak_is_kept(bwrap: BwrapBackend, world: World) -> None:
    """977 D39: 'Memory: each Trial runs in a systemd-run --user --scope of its own, with MemoryHigh,
    MemoryMax and MemorySwapMax'; issue 38: 'a soft limit (memory.high a little below the hard cap, so
    a session slows before it is killed)'. The Trial's own cgroup holds it while the Trial runs,
    and the most memory the Trial held comes back with its result."""
    caps = cgroup_caps()
    before = own(caps.parent, "assay-trial-")
    soft_file = "memory.high" if caps.kind == "cgroup v2" else "memory.soft_limit_in_bytes"
    seen: list[str] = []

    def look(line: str) -> None:
        [folder] = own(caps.parent, "assay-trial-") - before
        seen.append((folder / soft_file).read_text().strip())

    code = "held = bytearray(64 << 20); print('holding', flush=True)"
    result, lines = run(attrs.evolve(bwrap, memory_limit=512 << 20), world, code, on_line=look)
    assert lines == ["holding"] and result.exit_code == 0
    assert int(seen[0]) == memory.soft_limit(512 << 20) == int((512 << 20) * memory.SOFT_SHARE) // 4096 * 4096
    assert memory.soft_limit(512 << 20) < 512 << 20
    assert result.memory_peak is not None and 64 << 20 <= result.memory_peak < 512 << 20


def test_a_cgroup_v2_cap_sets_memory_high_below_memory_max(tmp_path: Path) -> None:
    """The same soft limit on cgroup v2, where it is memory.high (a throttle, not a kill)."""
    cap = memory.MemoryCaps("cgroup v2", tmp_path).start(1 << 30)
    assert isinstance(cap, memory.Cgroup)
    assert int((cap.path / "memory.max").read_text()) == 1 << 30
    assert int((cap.path / "memory.high").read_text()) == memory.soft_limit(1 << 30) < 1 << 30
    (cap.path / "memory.peak").write_text("123456\n")
    assert cap.peak() == 123456


def test_the_default_cap_comes_from_the_measured_footprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """977 D39: 'The caps' defaults are set once a Trial's footprint is measured'; issue 38: 'a default
    measured from the Harness's real footprint (the live checks measure a session's peak) instead of
    half the machine'. Before any measurement the default is half the machine; after, it is
    HEADROOM times the largest measured peak, within [FLOOR, half the machine], and the check says why."""
    from assay.storage import footprints
    from assay.storage.commands import now
    from assay.storage.home import AssayHome

    monkeypatch.delenv(memory.MEMORY_ENV, raising=False)
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "meminfo").write_text(f"MemTotal:       {64 << 20} kB\n")  # 64 GiB
    home = AssayHome(tmp_path / "home")
    home.root.mkdir()
    assert memory.default_and_source(proc, home) == (32 << 30, "half this machine: no footprint measured yet "
                                                               "(assay harnesses check)")
    footprints.record(home, "claude", footprints.Footprint(700 << 20, "2.1.197", now()))
    footprints.record(home, "codex", footprints.Footprint(50 << 20, "0.171.0", now()))
    limit, source = memory.default_and_source(proc, home)
    assert limit == memory.HEADROOM * (700 << 20) and "claude: 700 MiB" in source
    footprints.record(home, "claude", footprints.Footprint(10 << 20, "2.1.198", now()))
    assert memory.default_and_source(proc, home)[0] == memory.FLOOR
    footprints.record(home, "claude", footprints.Footprint(10 << 30, "2.1.199", now()))
    assert memory.default_and_source(proc, home)[0] == 32 << 30, "never more than half the machine"
    monkeypatch.setenv(memory.MEMORY_ENV, "3G")
    assert memory.default_and_source(proc, home) == (3 << 30, "from $ASSAY_TRIAL_MEMORY")


def test_without_a_cgroup_each_process_gets_the_data_limit(bwrap: BwrapBackend, world: World) -> None:
    code = """
        import resource
        print(resource.getrlimit(resource.RLIMIT_DATA)[0], flush=True)
        held = bytearray(512 << 20)
    """
    fallback = attrs.evolve(bwrap, memory_limit=256 << 20, memory_caps=memory.MemoryCaps("rlimit data"))
    result, lines = run(fallback, world, code)
    assert lines == [str(256 << 20)]
    assert result.exit_code == 1 and "MemoryError" in result.stderr_tail  # a failed allocation, not a kill
    assert result.void_cause is None  # so it can't be told from a crash


def test_a_sandbox_that_cannot_start_is_void_not_a_fail(each_relay: BwrapBackend, world: World, tmp_path: Path) -> None:
    missing = tmp_path / "never-made"
    result, _ = run(each_relay, world, "print('hi')", read_only=(missing,))
    assert result.void_cause is VoidCause.SANDBOX_FAILED and str(missing) in result.stderr_tail
    result, _ = run(each_relay, world, "", argv=("no-such-agent-binary",))
    assert result.void_cause is VoidCause.SANDBOX_FAILED and "can't start no-such-agent-binary" in result.stderr_tail
    long_path = "/no-such" + "/folder-of-a-long-name" * 30 + "/agent"  # the relay's whole message, however long
    result, _ = run(each_relay, world, "", argv=(long_path,))
    assert f"assay sandbox: can't start {long_path}: No such file or directory\n" in result.stderr_tail


# --- Whole Experiments ---------------------------------------------------------------------------


def trial_records(home: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(home.glob("evals/experiments/*/trials/*/*/attempt-*/trial.json"))]


@pytest.mark.slow
@OOM_KILLS
def test_a_whole_experiment_runs_in_bwrap_and_goes_on_past_a_trial_killed_by_its_cap(
    bwrap: BwrapBackend, tmp_path: Path, assay_home: Path
) -> None:
    cgroup_caps()
    factory = make_factory(tmp_path)
    make_suite(assay_home)
    (tmp_path / "scenario").mkdir()
    sc = scenario(tmp_path / "scenario" / "s.json",
                  {"good": {"*": "right"}, "hog": {"fixture/t1": "allocate:600,right", "*": "right"}})
    result = run_cli(
        assay_home, "experiment", "change", "--factory", str(factory), "--suite", "fixture", "--sandbox", "bwrap",
        "--candidate-model", "hog", "--json", plugins=PLUGINS, FAKE_SCENARIO=str(sc), ASSAY_TRIAL_MEMORY="200M",
    )
    assert result.returncode == 0, result.stderr
    trials = trial_records(assay_home)
    assert {t["backend"] for t in trials} == {"bwrap"}
    hog = [t for t in trials if t["task"] == "fixture/t1" and t["arm"] == "candidate"]
    assert len(hog) == 6 and {(t["outcome"], t["void_cause"]) for t in hog} == {("void", "memory_cap")}
    rest = [t for t in trials if t not in hog]
    assert len(rest) == 14 and {t["outcome"] for t in rest} == {"delivered"}
    exp_id = json.loads(result.stdout.splitlines()[-1])["id"]
    shown = json.loads(run_cli(assay_home, "experiments", exp_id, "--json", plugins=PLUGINS).stdout)
    assert shown["findings"] == [
        "The Candidate hit its memory cap 6 times: Runs have no cap, so its sessions may need more memory "
        "than a Trial allows (ASSAY_TRIAL_MEMORY)"]


@pytest.mark.slow
def test_a_refused_provider_host_is_a_void_at_once_and_a_finding_after_the_second(
    bwrap: BwrapBackend, tmp_path: Path, assay_home: Path
) -> None:
    """977 D37: 'A Harness that ignores the proxy finds no route, and its Trial is void'; issue 38:
    'When the proxy refuses a host on that Harness's own provider list (an allowlist gap, assay's
    configuration), end the Trial promptly as void `provider_unreachable` with the host named, and
    raise a finding in the Inbox after the second one; a host the agent chose (not the Harness's
    provider) stays refused and the Trial goes on.' The fake Harness's provider host doesn't
    resolve here; the Candidate's session asks for it and then, as Claude does, says nothing."""
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=2)
    (tmp_path / "scenario").mkdir()
    sc = scenario(tmp_path / "scenario" / "s.json", {
        "good": {"*": "connect:github.com,right"},
        "gap": {"fixture/t1": "connect:fake.invalid,sleep:300,right", "*": "right"}})
    result = run_cli(
        assay_home, "experiment", "change", "--factory", str(factory), "--suite", "fixture", "--sandbox", "bwrap",
        "--baseline-model", "good", "--candidate-model", "gap", "--trials-per-task", "1", "--timeout", "240",
        "--void-backoff", "0", "--json", plugins=PLUGINS, FAKE_SCENARIO=str(sc),
    )
    assert result.returncode == 0, result.stderr
    trials = trial_records(assay_home)
    gap = [t for t in trials if t["task"] == "fixture/t1" and t["arm"] == "candidate"]
    assert [(t["outcome"], t["void_cause"]) for t in gap] == [("void", "provider_unreachable")] * 3
    for t in gap:
        assert "the proxy refused fake.invalid:443" in t["diagnostic"] and "a host of the Harness's provider" in t["diagnostic"]
        assert "timed out" not in t["diagnostic"]
        started, ended = (datetime.fromisoformat(t[k]) for k in ("started_at", "ended_at"))
        assert (ended - started).total_seconds() < 240 / 2, "it ended at the refusal, not at its timeout"
    baseline = [t for t in trials if t["arm"] == "baseline"]
    assert {t["outcome"] for t in baseline} == {"delivered"}, "a host the agent chose is refused; it goes on"
    [log] = assay_home.glob("evals/experiments/*/trials/fixture__t1/baseline-0/attempt-0/proxy.jsonl")
    [github] = read_lines(log)
    assert github["target"] == "github.com:443" and not github["allowed"] and "provider" not in github
    exp_id = json.loads(result.stdout.splitlines()[-1])["id"]
    finding = ("The proxy refused fake.invalid:443 (can't resolve: [Errno -2] Name or service not known), a host "
               "of the fake-agent Harness's provider, in 3 Trials, each void (provider_unreachable)")
    shown = json.loads(run_cli(assay_home, "experiments", exp_id, "--json", plugins=PLUGINS).stdout)
    assert [f.split(": add it")[0] for f in shown["findings"]] == [finding]
    inbox = json.loads(run_cli(assay_home, "inbox", "--json", plugins=PLUGINS).stdout)
    [row] = [r for r in inbox["needs_you"] if r["id"] == exp_id]
    assert [f.split(": add it")[0] for f in row["findings"]] == [finding]
    activity = [json.loads(line) for line in (assay_home / "logs" / "activity.jsonl").read_text().splitlines()]
    raised = [a["message"] for a in activity if a["event"] == "finding"]
    assert "in 2 Trials" in raised[0], "raised after the second, not at the end"


@pytest.mark.slow
def test_custom_runners_run_in_bwrap_end_to_end(bwrap: BwrapBackend, tmp_path: Path, assay_home: Path) -> None:
    suite = make_process_suite(assay_home, tasks=2)
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    lazy = make_runner(tmp_path / "lazy", "lazy", {"*": "nofix"})
    result = run_cli(
        assay_home, "experiment", "--suite", "proc", "--baseline-runner", str(lazy), "--candidate-runner", str(good),
        "--trials-per-task", "1", "--sandbox", "bwrap", "--json", plugins=PLUGINS, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    trials = trial_records(assay_home)
    assert len(trials) == 2 * len(suite) and {t["backend"] for t in trials} == {"bwrap"}
    assert {t["outcome"] for t in trials} == {"delivered"}
    scores = [json.loads(p.read_text()) for p in assay_home.glob("evals/experiments/*/scores/*/*.json")]
    passed = {(score["task"], score["arm"]): score["passed"] for score in scores}
    assert passed == {**{(t, "candidate"): True for t in suite}, **{(t, "baseline"): False for t in suite}}


# --- Everywhere: the check, the proxy's rules, memory detection --------------------------------


def test_check_says_why_not_when_bwrap_is_missing() -> None:
    check = BwrapBackend(executable="assay-no-such-bwrap").check()
    assert not check.works and "not installed" in check.reason and check.memory_cap


def test_sandbox_check_command_reports_each_backend(assay_home: Path) -> None:
    result = run_cli(assay_home, "sandbox", "check", "--json")
    report = json.loads(result.stdout)
    rows = {row["name"]: row for row in report["backends"]}
    here = BwrapBackend().check()  # not the cached check: the cap depends on the footprints in this test's home
    assert rows["bwrap"]["works"] is here.works and rows["bwrap"]["memory_cap"] == here.memory_cap
    assert rows["none"]["works"] is True
    assert result.returncode == (0 if bwrap_check().works else 1)


def test_allowlist_entries_name_a_host_and_port_443_unless_told() -> None:
    allow = Allowlist.of(["API.Example.com.", "gateway.test:8443", "[::1]:9000"])
    assert allow.allows("api.example.com", 443) and allow.allows("gateway.test", 8443) and allow.allows("::1", 9000)
    assert not allow.allows("gateway.test", 443) and not allow.allows("example.com", 443)


@pytest.mark.parametrize("address, why", [
    ("127.0.0.53", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"),
    ("169.254.169.254", "link-local"), ("fe80::1%eth0", "link-local"), ("0.0.0.0", "unspecified"),
    ("224.0.0.1", "multicast"), ("198.18.9.9", "own"), ("198.18.9.10", "private"), ("93.184.215.14", None),
])
def test_refused_addresses(address: str, why: str | None) -> None:
    reason = refusal(address, frozenset({ipaddress.ip_address("198.18.9.9")}))
    assert (reason is None) if why is None else (why in reason)


def test_own_addresses_are_the_kernels_local_routes(tmp_path: Path) -> None:
    (tmp_path / "fib_trie").write_text(textwrap.dedent("""\
        Main:
          +-- 0.0.0.0/0 3 0 5
             |-- 10.1.2.3
                /32 host LOCAL
             |-- 10.1.2.255
                /32 link BROADCAST
        """))
    (tmp_path / "if_inet6").write_text("fd000000000000000000000000000002 04 40 00 82     eth0\n")
    assert {str(a) for a in own_addresses(tmp_path)} == {"10.1.2.3", "fd00::2"}
    assert {"127.0.0.1"} <= {str(a) for a in own_addresses()}


def test_the_proxy_answers_each_bad_request_with_a_status_and_logs_it(tmp_path: Path) -> None:
    log = tmp_path / "proxy.jsonl"
    proxy = Proxy(Allowlist.of(["loopback.test:80"]), log, resolver({"loopback.test": ["127.0.0.1"]}), own_addresses())
    requests = {
        b"GET http://x.test/ HTTP/1.1\r\n\r\n": "405", b"nonsense\r\n\r\n": "400",
        b"CONNECT x.test:443 HTTP/1.1\r\n\r\n": "403", b"CONNECT loopback.test:80 HTTP/1.1\r\n\r\n": "403",
        b"CONNECT loopback.test HTTP/1.1\r\n\r\n": "400",
    }

    async def main() -> dict[bytes, str]:
        path = tmp_path / "proxy.sock"
        answers = {}
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.serve, path)
            for request in requests:
                async with await trio.open_unix_socket(str(path)) as stream:
                    await stream.send_all(request)
                    answers[request] = (await stream.receive_some(1024)).split()[1].decode()
            nursery.cancel_scope.cancel()
        return answers

    assert trio.run(main) == requests
    logged = read_lines(log)
    assert [entry["status"] for entry in logged] == [405, 400, 403, 403, 400]
    assert not any(entry["allowed"] for entry in logged)


@pytest.mark.parametrize("text, size", [("512M", 512 << 20), ("8G", 8 << 30), ("1.5GiB", 3 << 29), ("4096", 4096)])
def test_memory_sizes(text: str, size: int) -> None:
    assert memory.parse_size(text) == size


def test_a_bad_memory_size_is_refused() -> None:
    with pytest.raises(ValueError, match="not a memory size"):
        memory.parse_size("lots")


def fake_proc(tmp_path: Path, *, v2_controllers: str, v1: bool) -> Path:
    """A /proc/self whose cgroups live under tmp_path: v2 at /unified, v1 memory at /memory."""
    proc = tmp_path / "proc"
    proc.mkdir()
    v2 = tmp_path / "unified" / "job"
    v2.mkdir(parents=True)
    (v2 / "cgroup.subtree_control").write_text(v2_controllers)
    mounts = [f"30 25 0:26 / {tmp_path / 'unified'} rw - cgroup2 cgroup2 rw"]
    cgroups = ["0::/job"]
    if v1:
        (tmp_path / "memory" / "job").mkdir(parents=True)
        (tmp_path / "memory" / "job" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
        mounts.append(f"31 25 0:27 / {tmp_path / 'memory'} rw - cgroup cgroup rw,memory")
        cgroups.insert(0, "4:memory:/job")
    (proc / "mountinfo").write_text("\n".join(mounts) + "\n")
    (proc / "cgroup").write_text("\n".join(cgroups) + "\n")
    return proc


@pytest.mark.parametrize("controllers, v1, kind", [
    ("cpu memory", True, "cgroup v2"), ("cpu", True, "cgroup v1"), ("", False, "rlimit data"),
])
def test_the_strongest_memory_cap_is_chosen(tmp_path: Path, controllers: str, v1: bool, kind: str) -> None:
    caps = memory.detect(fake_proc(tmp_path, v2_controllers=controllers, v1=v1))
    assert caps.kind == kind
    assert caps.parent == {"cgroup v2": tmp_path / "unified" / "job", "cgroup v1": tmp_path / "memory" / "job",
                           "rlimit data": None}[kind]


@pytest.mark.parametrize("events, text, killed", [
    ("memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n", True),
    ("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", False),
])
def test_a_cgroup_knows_when_its_cap_killed(tmp_path: Path, events: str, text: str, killed: bool) -> None:
    (tmp_path / events).write_text(text)
    assert memory.Cgroup(tmp_path, events).killed() is killed

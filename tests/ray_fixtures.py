"""A real Ray cluster on loopback for the ``--executor ray`` tests: each node an ``assay worker start
--block`` process of its own (its own process group, its own ``ASSAY_HOME``, its own loopback
address, 127.0.0.2, 127.0.0.3, …, as separate hosts would have), torn down by process group.

Ray turns 127.0.0.1 into the machine's outward address, so the nodes take other loopback
addresses, which it keeps: no traffic leaves loopback. Where Ray isn't installed or a node
won't start, :func:`ray_cluster` skips the test with the reason.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tests.conftest import cli_env
from tests.experiment_fixtures import PLUGINS

START_TIMEOUT = 90.0
# No usage report; a lost node noticed within about two seconds, not Ray's default half a minute.
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_health_check_period_ms": "500", "RAY_health_check_timeout_ms": "1000",
           "RAY_health_check_failure_threshold": "3"}


def auth_env() -> dict[str, str]:
    """Ray's token authentication with a token of this cluster's own, for its nodes and its
    coordinator alike: never the machine's ``~/.ray/auth_token``, which another cluster may write."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}


@attrs.define
class Node:
    name: str
    ip: str
    home: Path
    process: subprocess.Popen
    output: Path

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """Kill the node's every process at once, as a host that loses power (SIGKILL to its group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


@attrs.define
class RayCluster:
    """The cluster's head address and its nodes; :meth:`add` starts one more."""

    root: Path
    env: dict[str, str]
    auth: dict[str, str] = attrs.field(factory=auth_env)  # the coordinator needs it too (``**cluster.auth``)
    nodes: list[Node] = attrs.field(factory=list)
    address: str = ""

    def add(self, name: str, account: str | None = None, plugins: str = PLUGINS, runner_slots: int | None = None,
            **env: str) -> Node:
        """Start a node (the head first) with its own ``ASSAY_HOME``, offering ``runner_slots`` Custom
        runners' Trials at once (default: the machine's CPUs); ``env`` is its own (``FAKE_LOGINS``)."""
        index = len(self.nodes)
        ip = f"127.0.0.{index + 2}"
        home = self.root / f"home-{name}"
        home.mkdir()
        output = self.root / f"{name}.out"
        argv = [sys.executable, "-m", "assay", "worker", "start", "--block", "--num-cpus", "1",
                "--node-ip-address", ip, "--account", account or name]
        if runner_slots is not None:
            argv += ["--runner-slots", str(runner_slots)]
        if index == 0:
            argv += ["--head", "--port", str(_free_port(ip)), "--temp-dir", str(self.root / "ray")]
        else:
            argv += ["--address", self.address]
        env = {**cli_env(home, plugins), **self.env, **env, **RAY_ENV, **self.auth}
        with open(output, "w") as out:
            process = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                       cwd=self.root)
        node = Node(name, ip, home, process, output)
        self.nodes.append(node)
        deadline = time.monotonic() + START_TIMEOUT
        while "Ray runtime started" not in output.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                tail = output.read_text()[-1500:]
                self.close()
                pytest.skip(f"Ray can't start a node here: {tail.strip() or 'it printed nothing'}")
            time.sleep(0.2)  # polls the node's own output for the line `ray start` prints when up
        if index == 0:
            self.address = f"{ip}:{argv[argv.index('--port') + 1]}"
        return node

    def close(self) -> None:
        """Kill every node at once (SIGKILL to its group, which holds each of its Ray processes) and
        wait for it: Ray's own graceful stop took 10 s or more a node, and leaves nothing more."""
        for node in self.nodes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.process.pid, signal.SIGKILL)
        for node in self.nodes:
            node.process.wait(timeout=30)
        self.nodes.clear()

    def processes(self) -> list[int]:
        """Every process still running of this cluster's (their group is a node's)."""
        groups = {node.process.pid for node in self.nodes}
        found = []
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                with contextlib.suppress(OSError):
                    if os.getpgid(int(proc.name)) in groups:
                        found.append(int(proc.name))
        return found


def _free_port(ip: str) -> int:
    with socket.socket() as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


def ray_missing() -> str | None:
    return None if importlib.util.find_spec("ray") else "Ray is not installed (pip install 'assay[ray]')"


@contextlib.contextmanager
def ray_cluster(tmp_path: Path, **env: str) -> Iterator[RayCluster]:
    """A cluster with no node yet (``add`` the head first), torn down however the test ends.

    Ray's sockets live in its session folder, whose path must stay short (a Unix socket's path
    is at most 107 bytes), so it is a short folder of this test's own, linked from ``tmp_path``."""
    if why := ray_missing():
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    (tmp_path / "ray-cluster").symlink_to(root)
    cluster = RayCluster(root, dict(env))
    try:
        yield cluster
    finally:
        cluster.close()
        shutil.rmtree(root, ignore_errors=True)

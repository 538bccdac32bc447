"""``--executor ray``: an Experiment's Trials on a real Ray cluster of several nodes on loopback
(tests/ray_fixtures.py), each node a host with its own ``ASSAY_HOME`` and login resources
(``FAKE_LOGINS``: the Harnesses with a login there), started by ``assay worker start``.

Issue 33's acceptance: 'Trials land only where their login is, never more than two per login at
once; a node removed mid-Trial voids that attempt and the Experiment finishes elsewhere; Stop and
kill -9 of the coordinator leave no Ray task running; the same deterministic Experiment gives a
bit-identical Verdict on the local and the Ray executor.'
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.experiment_fixtures import experiment, make_factory, make_suite, scenario, start_experiment
from tests.ray_fixtures import ray_cluster, ray_missing
from tests.sandbox_fixtures import bwrap_unavailable

NO_LOGIN = {"FAKE_LOGINS": ""}  # a host where no Harness has a login
PLACE = "assay-login:harness:fake-agent@"


def _verdict(home: Path) -> dict:
    [exp] = (home / "evals" / "experiments").iterdir()
    data = json.loads((exp / "verdict.json").read_text())
    data.pop("computed_at")
    return data


def _trials(home: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(home.glob("evals/experiments/*/trials/*/*/attempt-*/trial.json"))]


def _log(home: Path) -> str:
    [log] = (home / "logs" / "experiment").glob("*.log")
    return log.read_text()


def _most_at_once(home: Path) -> int:
    """The most sessions running at one moment, from each session log's first and last ``at``."""
    edges = []
    for log in home.glob("evals/experiments/*/trials/*/*/attempt-*/session.log"):
        events = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        edges += [(next(e["at"] for e in events if e.get("type") == "start"), 1),
                  (next(e["at"] for e in reversed(events) if e.get("type") == "result"), -1)]
    most = now = 0
    for _at, step in sorted(edges):
        now += step
        most = max(most, now)
    return most


def _this_tests(marker: str) -> list[tuple[list[bytes], str]]:
    """The command lines and working folders of this test's processes: those whose environment
    holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append(((proc / "cmdline").read_bytes().split(b"\0"), os.readlink(proc / "cwd")))
        except OSError:
            continue
    return found


def _sessions(marker: str, on: Path | None = None) -> int:
    """Sessions running (the fake agent itself, not the reaper or bwrap around it); with ``on``,
    those on that host (their repository is in its scratch folder)."""
    return sum(1 for argv, cwd in _this_tests(marker)
               if Path(argv[0].decode()).name.startswith("python") and argv[2:3] and argv[2].endswith(b"fake_agent.py")
               and (on is None or cwd.startswith(f"{on}/")))


def _ray_tasks(marker: str) -> int:
    """Trials running as Ray tasks: a Ray worker names itself ``ray::`` and its task's name (the
    Trial's key, ``TASK:ARM-INDEX#ATTEMPT``) while it runs one, ``ray::IDLE`` between."""
    return sum(1 for argv, _cwd in _this_tests(marker) if re.fullmatch(rb"ray::\S+:\w+-\d+#\d+", argv[0].strip()))


@pytest.mark.slow
def test_trials_run_only_where_their_login_is_two_at_once_and_give_the_local_verdict(tmp_path: Path):
    """Three nodes: the head holds no login, two others share one account of the fake Harness's
    login (each offers its two slots to Ray, four in all), yet no more than two of its sessions
    ever run at once, none on the head; the Verdict is bit-identical to the local executor's."""
    steps = {"good": {"*": "sleep:0.3,right"}, "bad": {"fixture/t1": "sleep:0.3,wrong", "*": "sleep:0.3,right"}}
    factory = make_factory(tmp_path)
    local, remote = tmp_path / "local", tmp_path / "remote"
    for home in (local, remote):
        home.mkdir()
        make_suite(home)
    sc = scenario(tmp_path / "s.json", steps)
    here = experiment(local, factory, sc, "--candidate-model", "bad", "--json")
    assert here.returncode == 0, here.stderr
    with ray_cluster(tmp_path, FAKE_SCENARIO=str(sc)) as cluster:
        head = cluster.add("host-a", **NO_LOGIN)
        cluster.add("host-b", account="shared")
        cluster.add("host-c", account="shared")
        there = experiment(remote, factory, sc, "--candidate-model", "bad", "--json", "--executor", "ray",
                           "--ray-address", cluster.address, **cluster.auth)
        assert there.returncode == 0, there.stderr
    assert json.loads(there.stdout)["verdict"] == json.loads(here.stdout)["verdict"]  # Ray's own words stay out
    assert "SIGTERM handler" not in there.stderr and "(raylet)" not in there.stdout
    assert _verdict(remote) == _verdict(local)
    assert len(_trials(remote)) == len(_trials(local)) == 16
    places = re.findall(r"ran on host \S+ \((\S+)\)", _log(remote))
    assert places == [PLACE + "shared"] * 16
    assert not (head.home / "worker").exists()  # the host without the login ran nothing
    assert _most_at_once(remote) == 2  # two at once on the shared account, never its four Ray slots


@pytest.mark.slow
def test_a_node_lost_mid_trial_voids_that_attempt_and_the_experiment_finishes_elsewhere(tmp_path: Path):
    """A node SIGKILLed with a Trial's session running on it (a host that loses power): that attempt
    is void host_kill, its re-run lands on the host left, and the Experiment ends in a Verdict."""
    factory = make_factory(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    make_suite(home, tasks=2)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:2,right"}})
    with ray_cluster(tmp_path, FAKE_SCENARIO=str(sc)) as cluster:
        cluster.add("host-a", **NO_LOGIN)
        doomed = cluster.add("host-b", account="b")
        cluster.add("host-c", account="c", FAKE_LOGINS="fake-agent")
        proc = start_experiment(home, factory, sc, "--trials-per-task", "1", "--executor", "ray",
                                "--ray-address", cluster.address, **cluster.auth)
        try:
            wait_for(lambda: _sessions(f"FAKE_SCENARIO={sc}", on=doomed.home), timeout=120,
                     what="a session running on host-b")
            doomed.kill()
            out, err = proc.communicate(timeout=240)
        finally:
            proc.kill()
    assert proc.returncode == 0, err
    trials = _trials(home)
    voided = [t for t in trials if t["void_cause"] == "host_kill"]
    assert voided and all(t["outcome"] == "void" for t in voided)
    for lost in voided:
        rerun = [t for t in trials if (t["task"], t["arm"], t["index"]) == (lost["task"], lost["arm"], lost["index"])
                 and t["attempt"] > lost["attempt"]]
        assert [t["outcome"] for t in rerun] == ["delivered"]
    log = _log(home)
    assert "its host was lost mid-Trial" in log
    assert re.findall(r"ran on host \S+ \((\S+)\)", log)[-1] == PLACE + "c"
    assert json.loads(out)["verdict"]


@pytest.mark.slow
def test_stop_and_kill_9_of_the_coordinator_leave_no_ray_task_running(tmp_path: Path):
    """A Stop (SIGTERM) cancels the remote Trials (exit 3, stopped, resumable); a coordinator
    killed with SIGKILL takes its Ray job's tasks with it (none is detached), and each session
    with its bwrap sandbox (Ray kills a dead job's workers and their children; bwrap dies with
    its parent). Either way no Ray task and no session is left running on the cluster."""
    if why := bwrap_unavailable():
        pytest.skip(why)
    factory = make_factory(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    make_suite(home, tasks=1)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:300,right"}})
    marker = f"FAKE_SCENARIO={sc}"
    with ray_cluster(tmp_path, FAKE_SCENARIO=str(sc)) as cluster:
        node = cluster.add("host-a", account="a")
        args = ("--sandbox", "bwrap", "--executor", "ray", "--ray-address", cluster.address)
        for how in (signal.SIGTERM, signal.SIGKILL):
            proc = start_experiment(home, factory, sc, *args, **cluster.auth)
            try:
                wait_for(lambda: _sessions(marker) == 2 and _ray_tasks(marker) == 2, timeout=120,
                         what=f"two sessions running on the cluster, to {how.name}")
                proc.send_signal(how)
                proc.communicate(timeout=120)
            finally:
                proc.kill()
            assert proc.returncode == (3 if how == signal.SIGTERM else -signal.SIGKILL)
            wait_for(lambda: not _sessions(marker) and not _ray_tasks(marker), timeout=90,
                     what="no session and no Ray task left on the cluster")
            if how == signal.SIGTERM:
                [record] = home.glob("logs/experiment/*.json")
                assert json.loads(record.read_text())["state"] == "stopped"


def _closed_port(ip: str) -> int:
    """A port of ``ip`` nothing listens on (this test's own, bound and let go)."""
    with socket.socket() as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("given", ["flag", "config"])
def test_an_unreachable_head_is_one_line_naming_what_gave_its_address_and_nothing_is_written(tmp_path: Path, given: str):
    """No Ray head at the address: one line naming the flag (or the User config's field) and the
    address, exit 2, within seconds, and no Experiment or Command record written (Ray's own client
    retried for about twelve minutes, printing each retry, and the run ended "errored")."""
    if why := ray_missing():
        pytest.skip(why)
    factory = make_factory(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    make_suite(home, tasks=1)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}})
    if given == "flag":
        address, named, args = "127.0.0.1:1", "--ray-address 127.0.0.1:1", ("--executor", "ray", "--ray-address", "127.0.0.1:1")
    else:
        address = f"127.0.0.5:{_closed_port('127.0.0.5')}"
        (home / "config.toml").write_text(f'[executor]\nname = "ray"\naddress = "{address}"\n')
        named, args = f"{home / 'config.toml'}: executor.address {address}", ()
    done = experiment(home, factory, sc, "--json", *args, RAY_ADDRESS="")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"assay: error: {named}") and "no Ray head answers there (connection refused)" in line
    assert done.stdout == ""
    assert not (home / "evals" / "experiments").exists() and not (home / "logs").exists()

"""``--executor ray``: an Experiment's Trials on a real Ray cluster of several nodes on loopback
(tests/ray_fixtures.py), each node a host with its own ``ASSAY_HOME`` and login resources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.experiment_fixtures import experiment, make_factory, make_suite, scenario
from tests.ray_fixtures import ray_cluster


def _verdict(home: Path) -> dict:
    [exp] = (home / "evals" / "experiments").iterdir()
    data = json.loads((exp / "verdict.json").read_text())
    data.pop("computed_at")
    return data


def _trials(home: Path) -> list[dict]:
    [exp] = (home / "evals" / "experiments").iterdir()
    return [json.loads(p.read_text()) for p in sorted(exp.glob("trials/*/*/attempt-*/trial.json"))]


@pytest.mark.slow
def test_a_whole_experiment_across_two_nodes_gives_the_local_verdict(tmp_path: Path):
    """The same deterministic Experiment gives a bit-identical Verdict on the local and the Ray
    executor, and its Trials ran on both hosts."""
    steps = {"good": {"*": "right"}, "bad": {"fixture/t1": "wrong", "*": "right"}}
    factory = make_factory(tmp_path)
    local, remote = tmp_path / "local", tmp_path / "remote"
    for home in (local, remote):
        home.mkdir()
        make_suite(home)
    sc = scenario(tmp_path / "s.json", steps)
    here = experiment(local, factory, sc, "--candidate-model", "bad", "--json")
    assert here.returncode == 0, here.stderr
    with ray_cluster(tmp_path, FAKE_SCENARIO=str(sc)) as cluster:
        cluster.add("host-a")
        cluster.add("host-b")
        there = experiment(remote, factory, sc, "--candidate-model", "bad", "--json", "--executor", "ray",
                           "--ray-address", cluster.address)
        assert there.returncode == 0, there.stderr
    assert _verdict(remote) == _verdict(local)
    [log] = (remote / "logs" / "experiment").glob("*.log")
    text = log.read_text()
    assert "ran on host" in text
    assert "(assay-login:harness:fake-agent@host-a)" in text and "(assay-login:harness:fake-agent@host-b)" in text
    assert len(_trials(remote)) == len(_trials(local)) == 16

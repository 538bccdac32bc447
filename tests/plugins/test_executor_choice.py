"""Choosing an executor (``--executor``, ``--ray-address``, the User config's ``[executor]``) and
``assay worker start``'s logins, without a cluster: bad input is one line naming the flag or the
file and field, exit 2, and no Trial runs (docs/distributed.md)."""

from __future__ import annotations

import json
import os
import shlex
import socket
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS, experiment, make_factory, make_runner, make_suite, scenario
from tests.ray_fixtures import ray_missing


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path, Path]:
    home = tmp_path / "home"
    home.mkdir()
    make_suite(home, tasks=1)
    return home, make_factory(tmp_path), scenario(tmp_path / "s.json", {"good": {"*": "right"}})


def _no_trials(home: Path) -> bool:
    return not list(home.glob("evals/experiments/*/trials/*/*/attempt-*"))


def test_an_unknown_executor_is_refused_naming_the_flag_and_the_choices(world):
    home, factory, sc = world
    result = experiment(home, factory, sc, "--executor", "nope")
    assert result.returncode == 2
    assert "--executor: unknown executor 'nope' (known: local, ray)" in result.stderr
    assert _no_trials(home)


def test_the_local_executor_takes_no_address(world):
    home, factory, sc = world
    result = experiment(home, factory, sc, "--executor", "local", "--ray-address", "10.0.0.5:6379")
    assert result.returncode == 2
    assert "--ray-address: the 'local' executor runs Trials here and takes no address" in result.stderr
    assert _no_trials(home)


def test_a_bad_executor_table_in_the_user_config_names_its_file_and_field(world):
    home, factory, sc = world
    (home / "config.toml").write_text("[executor]\nname = 42\n")
    result = experiment(home, factory, sc)
    assert result.returncode == 2
    assert f"{home / 'config.toml'}: executor.name must be a non-empty string" in result.stderr
    (home / "config.toml").write_text('[executor]\nname = "ray"\nport = 1\n')
    result = experiment(home, factory, sc)
    assert result.returncode == 2 and "executor.port: unknown field (known: name, address)" in result.stderr
    assert _no_trials(home)


@pytest.mark.slow
def test_the_user_config_chooses_ray_and_a_flag_chooses_local_again(world, tmp_path: Path):
    """``[executor] name = "ray"`` is every run's executor: two Custom runner Arms go to it (the
    config's head, which doesn't answer, refuses them naming the file and field, before any
    Trial); ``--executor local`` runs them here."""
    if why := ray_missing():
        pytest.skip(why)
    home, _factory, _sc = world
    (home / "config.toml").write_text('[executor]\nname = "ray"\naddress = "127.0.0.1:1"\n')
    from tests.experiment_fixtures import make_process_suite

    make_process_suite(home, tasks=1)
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    lazy = make_runner(tmp_path / "lazy", "lazy", {"*": "nofix"})
    args = ("experiment", "--suite", "proc", "--baseline-runner", str(lazy), "--candidate-runner", str(good),
            "--trials-per-task", "1", "--sandbox", "none", "--json")
    refused = run_cli(home, *args, plugins=PLUGINS, cwd=tmp_path)
    assert refused.returncode == 2
    assert f"{home / 'config.toml'}: executor.address 127.0.0.1:1" in refused.stderr
    assert "no Ray head answers there" in refused.stderr
    assert _no_trials(home)
    here = run_cli(home, *args, "--executor", "local", plugins=PLUGINS, cwd=tmp_path)
    assert here.returncode == 0, here.stderr
    assert json.loads(here.stdout)["verdict"]


def test_worker_start_offers_each_login_found_here_as_two_slots_and_a_place_for_runners(tmp_path: Path):
    """``assay worker start`` gives its node one custom resource per login present on this host,
    two slots each (the spec's two sessions at once per login), named for the account, and a
    place for Custom runners' Trials named for the host, as many at once as ``--runner-slots``
    (default: the host's CPUs; 0: none)."""
    home = tmp_path / "home"
    home.mkdir()
    shown = run_cli(home, "worker", "start", "--head", "--account", "team-a", "--dry-run", plugins=PLUGINS)
    assert shown.returncode == 0, shown.stderr
    assert "logins here: assay-login:harness:fake-agent@team-a (2 slots)" in shown.stdout
    command = shlex.split(shown.stdout.splitlines()[-1])
    resources = json.loads(command[command.index("--resources") + 1])
    assert resources["assay-login:harness:fake-agent@team-a"] == 2
    assert command[1:3] == ["start", "--head"] and "--include-dashboard=false" in command
    cpus = len(os.sched_getaffinity(0))
    assert resources[f"assay-runner@{socket.gethostname()}"] == cpus
    assert f"Custom runners here: assay-runner@{socket.gethostname()} ({cpus} at once)" in shown.stdout
    three = run_cli(home, "worker", "start", "--head", "--runner-slots", "3", "--node-ip-address", "10.0.0.7",
                    "--dry-run", plugins=PLUGINS)
    command = shlex.split(three.stdout.splitlines()[-1])
    assert {k: v for k, v in json.loads(command[command.index("--resources") + 1]).items()
            if k.startswith("assay-runner")} == {"assay-runner@10.0.0.7": 3}
    none_for_runners = run_cli(home, "worker", "start", "--head", "--runner-slots", "0", "--dry-run", plugins=PLUGINS)
    assert "Custom runners here: none" in none_for_runners.stdout
    assert "assay-runner" not in none_for_runners.stdout.splitlines()[-1]
    none = run_cli(home, "worker", "start", "--address", "10.0.0.5:6379", "--dry-run", plugins=PLUGINS,
                   FAKE_LOGINS="")
    assert none.returncode == 0 and "logins here: none" in none.stdout
    assert "no Harness has a login on this host (`assay harnesses`); it will run Custom runners' Trials only" in none.stderr
    idle = run_cli(home, "worker", "start", "--address", "10.0.0.5:6379", "--runner-slots", "0", "--dry-run",
                   plugins=PLUGINS, FAKE_LOGINS="")
    assert idle.returncode == 0 and idle.stderr.rstrip().endswith("it will run no Trial")
    both = run_cli(home, "worker", "start", "--dry-run", plugins=PLUGINS)
    assert both.returncode == 2 and "give --address HEAD to join a cluster, or --head to start one" in both.stderr

"""``assay worker start``: this host as a node of a Ray cluster that runs Trials for ``--executor ray``.

It finds the logins on this host (each installed Harness whose ``login_present`` says so) and
starts ``ray start`` with one custom resource per login, :data:`~assay.sessions.slots.PER_LOGIN`
slots each, named for the login and an account (``--account``, default this host's name: hosts
that share one provider account give the same name, so they share its two slots). The node's
processes inherit this environment: ``ASSAY_HOME`` is this host's (its logins, its caches),
never the coordinator's.

A Custom runner needs no login: the node also offers a place for Custom runners' Trials,
``assay-runner@HOST`` (``--node-ip-address``, else the host's name), ``--runner-slots`` at once
(default: this host's CPUs; 0 offers none), which every runner Arm of an Experiment shares.

Ray's workers kill their direct children with SIGKILL as they exit (``RAY_kill_child_processes_on_worker_exit``,
on by default): under ``--sandbox none`` that child is the pass-through backend's reaper server,
whose reapers would each have killed their session and whatever it left once their lifeline (the
worker) went. So the node starts with that off, unless the environment sets it: the reapers do the
whole job, and a session's parent-death signal still ends it where its reaper is killed anyway
(``plugins/sandbox_none/reaper.py``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import sys
from pathlib import Path
from typing import Optional

import typer
from assay.cli.output import fail, say
from assay.hooks.loaded import Plugins


KILL_CHILDREN = "RAY_kill_child_processes_on_worker_exit"


def host_resources(plugins: Plugins, assay_home: Path, account: str) -> dict[str, int]:
    """One custom resource per login present here, :data:`PER_LOGIN` slots each."""
    from assay.plugins.executor_ray.executor import place_name
    from assay.sessions.slots import PER_LOGIN, harness_login

    logins = {harness_login(h) for h in plugins.harnesses().values() if _present(h, assay_home)}
    return {place_name(login, account): PER_LOGIN for login in sorted(logins)}


def runner_resources(slots: int, host: str) -> dict[str, int]:
    """This host's place for Custom runners' Trials, ``slots`` at once (none for 0)."""
    from assay.plugins.executor_ray.executor import runner_place

    return {runner_place(host): slots} if slots else {}


def _present(harness: object, assay_home: Path) -> bool:
    try:
        return bool(harness.login_present(assay_home))  # type: ignore[attr-defined]
    except Exception:  # a broken Harness plugin offers no login here; `assay harnesses` says why
        return False


def register(app: typer.Typer, plugins: Plugins) -> None:
    """Run a host's Ray node for --executor ray (docs/distributed.md)."""
    group = typer.Typer(rich_markup_mode=None, no_args_is_help=True)

    @group.command("start")
    def start(
        address: Optional[str] = typer.Option(None, "--address", metavar="HOST:PORT", help="The head's address (omit with --head)."),
        head: bool = typer.Option(False, "--head", help="Start the cluster's head here (its address is printed)."),
        port: int = typer.Option(6379, "--port", help="With --head: the port the head listens on (0: any free one)."),
        account: Optional[str] = typer.Option(None, "--account", help="The accounts' name for this host's logins (default: the host's name); hosts sharing provider accounts give the same one."),
        node_ip_address: Optional[str] = typer.Option(None, "--node-ip-address", help="The address other hosts reach this one at."),
        runner_slots: Optional[int] = typer.Option(None, "--runner-slots", min=0, help="Custom runners' Trials this host runs at once (default: its CPUs; 0: none)."),
        num_cpus: int = typer.Option(1, "--num-cpus", min=0, help="CPUs Ray may schedule its own work on (Trials take a login slot, not a CPU)."),
        temp_dir: Optional[Path] = typer.Option(None, "--temp-dir", help="Ray's session folder (default: Ray's own)."),
        block: bool = typer.Option(False, "--block", help="Stay in the foreground; Ctrl-C or SIGTERM stops the node."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Print the `ray start` command and the logins, start nothing."),
    ) -> None:
        """Start this host's Ray node with its logins as custom resources (docs/distributed.md)."""
        from assay.storage.home import AssayHome

        if bool(address) == head:
            fail("give --address HEAD to join a cluster, or --head to start one")
        ray = shutil.which("ray", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        if ray is None and not dry_run:
            fail("Ray is not installed here; pip install 'assay[ray]'")
        home = AssayHome.from_env()
        logins = host_resources(plugins, home.root, account or socket.gethostname())
        runners = runner_resources(len(os.sched_getaffinity(0)) if runner_slots is None else runner_slots,
                                   node_ip_address or socket.gethostname())
        resources = {**logins, **runners}
        argv = [ray or "ray", "start", *(["--head", "--port", str(port)] if head else ["--address", str(address)]),
                "--resources", json.dumps(resources), "--num-cpus", str(num_cpus), "--disable-usage-stats"]
        if head:
            argv.append("--include-dashboard=false")
        if node_ip_address:
            argv += ["--node-ip-address", node_ip_address]
        if temp_dir:
            argv += ["--temp-dir", str(temp_dir.absolute())]
        if block:
            argv.append("--block")
        say(f"logins here: {', '.join(f'{name} ({n} slots)' for name, n in logins.items()) or 'none'}")
        say(f"Custom runners here: {', '.join(f'{name} ({n} at once)' for name, n in runners.items()) or 'none'}")
        if not logins:
            say("warning: no Harness has a login on this host (`assay harnesses`); it will run "
                + ("Custom runners' Trials only" if runners else "no Trial"), err=True)
        if dry_run:
            say(shlex.join(argv))
            return
        sys.stdout.flush()
        os.execvpe(argv[0], argv, {KILL_CHILDREN: "0", **os.environ, "ASSAY_HOME": str(home.root)})

    app.add_typer(group, name="worker", help=register.__doc__)


"""``assay tasks``: work with one Eval task, e.g. prepare its time-safe repository by hand."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from assay.cli.output import JsonOpt, emit_json, fail, say
from assay.evaltasks import manifests, timesafe
from assay.storage.home import AssayHome

if TYPE_CHECKING:
    from assay.hooks import plugin_manager as plugin_loading  # loaded on first use (cli.PluginsOnUse)


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    tasks_app = typer.Typer(help="Work with single Eval tasks (SUITE/TASK).", no_args_is_help=True)
    app.add_typer(tasks_app, name="tasks")

    @tasks_app.command("prepare")
    def tasks_prepare(
        task_ref: str = typer.Argument(..., metavar="SUITE/TASK", help="The Eval task, e.g. reviews/bug-1."),
        dest: Path = typer.Option(None, "--dest", help="Where to put the copy (absent or empty). "
                                  "Default: a fresh folder under the system's temp folder."),
        json_: bool = JsonOpt,
    ) -> None:
        """Prepare the task's time-safe repository and print the path of a fresh Trial copy.

        The repository is cached once per (repository, base commit) under ASSAY_HOME/evals/cache;
        the copy has only base's history, on one branch, and is verified before it is printed.
        Spec-review tasks also get a local bare origin next to the copy (DIR.origin.git).
        """
        home = AssayHome.from_env()
        kinds = plugins.suite_kinds()
        try:
            task = manifests.find_task(home, task_ref, kinds)
        except manifests.ManifestError as e:
            fail(str(e))
        origin = kinds[task.kind].needs_origin
        if dest is None:
            dest = Path(tempfile.mkdtemp(prefix=f"assay-{task.suite}-{task.name}-")) / task.name
        timings: dict[str, float] = {}
        try:
            start = time.perf_counter()
            commit = manifests.repository_commit(task, plugins.suite_kinds()[task.kind])
            cached = timesafe.prepare_cache(home, task.repository, commit)
            timings["cache"] = time.perf_counter() - start
            start = time.perf_counter()
            path = timesafe.trial_copy(cached, dest, origin=origin, verify=True)
            timings["copy_and_verify"] = time.perf_counter() - start
        except timesafe.DestinationNotEmpty as e:
            fail(f"--dest: {e}")
        except timesafe.TimeSafeError as e:
            fail(str(e), code=1)
        if not json_:
            say(path)
            return
        emit_json({
            "task": task.id, "kind": task.kind, "path": str(path),
            "origin": str(timesafe.origin_path(path)) if origin else None,
            "repository": task.repository, "base": cached.base, "base_ref": commit,
            "cache": str(cached.path), "cache_built": cached.built,
            "timings": {name: round(seconds, 4) for name, seconds in timings.items()},
        })

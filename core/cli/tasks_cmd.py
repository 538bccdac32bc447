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
    tasks_app = typer.Typer(help="Work with single Eval tasks (SUITE/TASK), or import public ones.", no_args_is_help=True)
    app.add_typer(tasks_app, name="tasks")
    import_app = typer.Typer(help="Import a public task set's instances as a process suite.", no_args_is_help=True)
    tasks_app.add_typer(import_app, name="import")

    @import_app.command("swebench")
    def tasks_import_swebench(
        source: Path = typer.Argument(..., metavar="FILE", help="The instances: a JSON array or JSON Lines file "
                                      "with SWE-bench's fields (instance_id, repo, base_commit, ...)."),
        suite: str = typer.Option(..., "--suite", help="The process suite to import into (made if absent)."),
        repos: Path = typer.Option(..., "--repos", help="The folder of local mirrors: DIR/<owner>__<repo> "
                                   "(a clone or a bare clone, DIR/<owner>__<repo>.git). Nothing is downloaded."),
        hints: bool = typer.Option(False, "--hints", help="Add each instance's hints_text to its issue "
                                   "(left out by default, as SWE-bench leaves it out)."),
        json_: bool = JsonOpt,
    ) -> None:
        """Write an Eval task per instance: its repository at base_commit, problem_statement as the issue,
        test_patch's files sealed, and success when every FAIL_TO_PASS and PASS_TO_PASS test passes.

        Re-importing the same file changes nothing; a changed instance is rewritten and reported. A
        malformed instance is refused with one line naming it and the field, and nothing is written.
        """
        from assay.evaltasks import swebench

        if not repos.is_dir():
            fail(f"--repos: no such folder: {repos}")
        try:
            done = swebench.import_suite(AssayHome.from_env(), source, suite, repos, hints=hints)
        except swebench.ImportRefused as e:
            fail(str(e))
        if json_:
            emit_json({"suite": suite, "folder": str(done.suite), "new": list(done.new),
                       "changed": [{"task": t, "changed": list(what)} for t, what in done.changed],
                       "unchanged": list(done.unchanged), "kept": list(done.kept)})
            return
        for name in done.new:
            say(f"new: {suite}/{name}")
        for name, what in done.changed:
            say(f"changed: {suite}/{name} ({', '.join(what)})")
        for name in done.kept:
            say(f"kept: {suite}/{name} (not in {source.name})")
        say(f"{suite}: {len(done.new)} new, {len(done.changed)} changed, {len(done.unchanged)} unchanged "
            f"task(s) in {done.suite}. Check that they can run here: assay suites check")

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

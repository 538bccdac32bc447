"""``assay traces export``: send an Experiment's or a Scoring run's Session traces to an OTLP collector."""

from __future__ import annotations

from pathlib import Path

import typer
from assay.cli.output import JsonOpt, emit_json, fail, say
from assay.hooks import plugin_manager as plugin_loading
from assay.storage.home import AssayHome


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    traces_app = typer.Typer(help="Session traces (OTLP): send them to a collector.", no_args_is_help=True)
    app.add_typer(traces_app, name="traces")

    @traces_app.command("export")
    def traces_export(
        id: str = typer.Argument(..., metavar="ID", help="An Experiment's id (or a unique prefix), or a Scoring run's."),
        endpoint: str = typer.Option(..., "--endpoint", metavar="URL",
                                     help="The OTLP/HTTP collector, e.g. http://localhost:4318 (Jaeger, Phoenix: "
                                     "http://localhost:6006); /v1/traces is added unless the URL ends with it."),
        json_: bool = JsonOpt,
    ) -> None:
        """Send every span of ID's trace (its Trials' sessions, grading, Verdict) as OTLP protobuf."""
        from assay.traces import otlp
        from assay.traces.read import load, trace_files

        folder, what = _traces_of(AssayHome.from_env(), id)
        files = trace_files(folder)
        if not files:
            fail(f"{what} has no Session traces yet ({folder})")
        try:
            requests = load(folder)
            sent = otlp.post(endpoint, requests)
        except (otlp.TraceFileError, otlp.ExportError) as e:
            fail(str(e), 1)
        if json_:
            emit_json({"id": id, "endpoint": endpoint, "files": len(files), "spans": sent})
        else:
            say(f"sent {sent} spans of {what} ({len(files)} trace files) to {endpoint}")


def _traces_of(home: AssayHome, id: str) -> tuple[Path, str]:
    """The traces folder of the Experiment or Scoring run ``id`` names."""
    from assay.engine import results
    from assay.scoring.store import ScoringStore

    scoring = ScoringStore(home).traces(id)
    if "/" not in id and not id.startswith(".") and scoring.is_dir():
        return scoring, f"Scoring run {id}"
    try:
        exp = results.find(home, id)
    except ValueError as e:
        fail(f"{e}, and no Scoring run '{id}'")
    return exp.traces, f"Experiment {exp.id}"

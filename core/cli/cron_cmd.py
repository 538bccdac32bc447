"""``assay cron-jobs``: the crontab lines that run assay, when each runs next, and how it last went
(the Console's Cron jobs page shows the same)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from assay.cli.output import JsonOpt, emit_json, say, table
from assay.storage import cronjobs
from assay.storage.commands import now
from assay.storage.home import AssayHome

if TYPE_CHECKING:
    from assay.hooks import plugin_manager as plugin_loading  # loaded on first use (cli.PluginsOnUse)


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    @app.command("cron-jobs")
    def cron_jobs(json_: bool = JsonOpt) -> None:
        """List this user's crontab lines that run assay: next run, last run, late or not."""
        data = cronjobs.listing(AssayHome.from_env(), now())
        if json_:
            emit_json(data)
            return
        if data["note"]:
            say(data["note"])
        table(["LINE", "SCHEDULE", "RUNS", "NEXT RUN", "LAST RUN", "NOTE"], [
            (job["line"], job["schedule"], job["runs"], _when(job["next_run"]), _last(job), _note(job))
            for job in data["cron_jobs"]
        ], empty="No crontab line runs assay (docs/scoring.md shows the weekly `assay score` line).")


def _when(moment: str | None) -> str:
    return moment[:16].replace("T", " ") if moment else "-"


def _last(job: dict) -> str:
    last = job["last_run"]
    if job["other_home"]:
        return f"recorded in {job['assay_home'] or '~/.assay'}"
    if not last:
        return "never here" if job["runs"] in cronjobs.RECORDED else "-"
    return f"{_when(last['started_at'])} {last['outcome'] or last['state']} ({last['id']})"


def _note(job: dict) -> str:
    if job["problem"]:
        return f"cron refuses it: {job['problem']}"
    if job["late"]:
        return f"LATE: due {_when(job['last_due'])}, no run since"
    return ""

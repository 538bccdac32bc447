"""The Cron jobs page and ``assay cron-jobs`` (spec 978: "You add the crontab line, and the
Console's Cron jobs page lists it"): this user's crontab lines that run assay, read through a
fake ``crontab`` on PATH (the real one edits the machine's crontab), with the real Command
records of a real Experiment for the last run."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest
from assay.storage import cronjobs
from assay.storage.home import AssayHome

from tests.conftest import run_cli
from tests.console.test_routes import JSON, client, finished  # noqa: F401
from tests.experiment_fixtures import PLUGINS

CRONTAB = """# m h dom mon dow command
MAILTO=me@example.com
0 6 * * 1  assay score >> $HOME/.assay/logs/score-cron.log 2>&1
*/30 * * * *  cd /factory && {home} /usr/local/bin/assay experiment change --json
15 3 * * *  ASSAY_HOME=/elsewhere assay release-check HEAD
0 25 * * *  assay score
5 4 * * *  /usr/bin/backup --all
"""


@pytest.fixture
def crontab(tmp_path: Path) -> dict[str, str]:
    """A ``crontab`` on PATH that answers ``-l`` from $FAKE_CRONTAB as the real one does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "crontab"
    fake.write_text('#!/bin/sh\n[ "$1" = -l ] || exit 2\n[ -f "$FAKE_CRONTAB" ] && exec cat "$FAKE_CRONTAB"\n'
                    'echo "no crontab for $(id -un)" >&2\nexit 1\n')
    fake.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_CRONTAB": str(tmp_path / "crontab.txt")}


def write(crontab: dict[str, str], assay_home: Path) -> None:
    Path(crontab["FAKE_CRONTAB"]).write_text(CRONTAB.format(home=f"ASSAY_HOME={assay_home}"))


def test_the_cli_lists_the_lines_that_run_assay_with_next_and_last_run(assay_home, finished, crontab):  # noqa: F811
    write(crontab, assay_home)
    shown = run_cli(assay_home, "cron-jobs", plugins=PLUGINS, **crontab)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split() == ["LINE", "SCHEDULE", "RUNS", "NEXT", "RUN", "LAST", "RUN", "NOTE"]
    assert len(lines) == 5  # four lines run assay; the backup line and the comments are not listed
    score, experiment, release, broken = lines[1:]
    assert score.split()[:7] == ["3", "0", "6", "*", "*", "1", "score"] and "recorded in ~/.assay" in score
    assert experiment.split()[:7] == ["4", "*/30", "*", "*", "*", "*", "experiment"]
    record = json.loads((assay_home / "logs" / "experiment" / f"{finished}.json").read_text())
    assert experiment.endswith(f"{record['outcome']} ({finished})") and record["outcome"] in ("fail", "inconclusive")
    assert "recorded in /elsewhere" in release
    assert "cron refuses it: hour '25': '25' is not a hour (0-23)" in broken

    data = json.loads(run_cli(assay_home, "cron-jobs", "--json", plugins=PLUGINS, **crontab).stdout)
    assert data["note"] == "" and [j["runs"] for j in data["cron_jobs"]] == ["score", "experiment", "release-check",
                                                                            "score"]
    assert data["cron_jobs"][1]["last_run"]["id"] == finished and data["cron_jobs"][1]["late"] is False


def test_no_crontab_says_so(assay_home, crontab):
    shown = run_cli(assay_home, "cron-jobs", plugins=PLUGINS, **crontab)
    assert shown.returncode == 0
    assert "crontab -l: no crontab for" in shown.stdout and "No crontab line runs assay" in shown.stdout


def test_a_job_that_stopped_running_is_marked_late(assay_home, finished):  # noqa: F811
    """Late: due more than 15 minutes ago with no run of its kind since one before; a line never
    run here is not late (it may have been added after its last due time)."""
    text = CRONTAB.format(home=f"ASSAY_HOME={assay_home}")
    home = AssayHome(assay_home)
    now = dt.datetime.now(dt.timezone.utc)
    soon = {j.runs: j for j in cronjobs.cron_jobs(home, text, now + dt.timedelta(minutes=1))}
    assert not soon["experiment"].late
    later = cronjobs.cron_jobs(home, text, now + dt.timedelta(hours=2))  # due three times since it ran
    assert [j.late for j in later] == [False, True, False, False]  # score never ran here; release is elsewhere
    started = dt.datetime.fromisoformat(later[1].last_run["started_at"])
    assert started < later[1].last_due <= now + dt.timedelta(hours=2) - cronjobs.GRACE


def test_the_cron_jobs_page_shows_the_same_as_the_cli(assay_home, finished, crontab, monkeypatch):  # noqa: F811
    write(crontab, assay_home)
    for key, value in crontab.items():
        monkeypatch.setenv(key, value)
    c = client(assay_home)
    page = c.get("/cron-jobs", headers=JSON).json()
    cli = json.loads(run_cli(assay_home, "cron-jobs", "--json", plugins=PLUGINS, **crontab).stdout)
    assert [{k: v for k, v in j.items() if k not in ("next_run", "last_due")} for j in page["cron_jobs"]] == \
        [{k: v for k, v in j.items() if k not in ("next_run", "last_due")} for j in cli["cron_jobs"]]
    html = c.get("/cron-jobs").text
    assert "<h1>Cron jobs</h1>" in html and f'href="/experiments/{finished}"' in html
    assert "<strong>cron refuses it:</strong> hour &#39;25&#39;: &#39;25&#39; is not a hour (0-23)" in html
    assert "/usr/bin/backup" not in html and '<a href="/cron-jobs">Cron jobs</a>' in html

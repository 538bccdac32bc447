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
from tests.console.test_routes import JSON, client, finished, finished_once  # noqa: F401 - fixtures
from tests.experiment_fixtures import PLUGINS
from tests.scoring_fixtures import RUN, score, world  # noqa: F401 - world is a fixture

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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_scoring_run_that_stopped_running_is_marked_late(assay_home, world):  # noqa: F811
    """Late: a Scoring run line due 15 minutes or more ago with no Scoring run since one before. A
    line never run here is not late (it may have been added after it was last due), and an
    Experiment or release-check line is never late (some of their runs leave no record)."""
    text = f"""ASSAY_HOME='{assay_home}'
*/30 * * * *  assay score --json
*/30 * * * *  assay experiment change
"""
    home = AssayHome(assay_home)
    now = dt.datetime.now(dt.timezone.utc)
    in_two_hours = now + dt.timedelta(hours=2)  # the lines were due three or four times by then
    assert [j.late for j in cronjobs.cron_jobs(home, text, in_two_hours)] == [False, False]  # never run here
    assert score(assay_home, world, *RUN).returncode == 0
    soon = cronjobs.cron_jobs(home, text, now + dt.timedelta(minutes=1))
    assert soon[0].last_run["kind"] == "scoring" and not soon[0].late and not soon[0].other_home
    later = cronjobs.cron_jobs(home, text, in_two_hours)
    assert [j.late for j in later] == [True, False]
    started = dt.datetime.fromisoformat(later[0].last_run["started_at"])
    assert started < later[0].last_due <= in_two_hours - cronjobs.GRACE


def test_where_a_line_records_its_runs(tmp_path):
    """A line's ASSAY_HOME as cron and the shell set it: quoted with spaces, inline or on its own
    line, $HOME expanded by the shell only, unset meaning assay's ~/.assay."""
    spaced = tmp_path / "my home"
    home = AssayHome(spaced)
    lines = f"""0 6 * * 1  ASSAY_HOME="{spaced}" assay score
ASSAY_HOME={spaced}
0 6 * * 1  assay score
ASSAY_HOME=$HOME/.assay
0 6 * * 1  assay score
0 6 * * 1  cd /x && ASSAY_HOME=$HOME/.assay assay score
"""
    jobs = cronjobs.cron_jobs(home, lines, dt.datetime.now(dt.timezone.utc))
    assert [(j.assay_home, j.other_home) for j in jobs] == [
        (str(spaced), False), (str(spaced), False), ("$HOME/.assay", True), ("$HOME/.assay", True)]
    at_default = cronjobs.cron_jobs(AssayHome(Path.home() / ".assay"), lines, dt.datetime.now(dt.timezone.utc))
    assert [j.other_home for j in at_default] == [True, True, True, False]  # cron expands no $HOME itself


@pytest.mark.slow
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


def test_a_time_in_the_spring_forward_gap_runs_after_the_jump(tmp_path, monkeypatch):
    """02:30 doesn't exist on 2026-03-08 in New York: cron runs the job after the clocks jump, so the
    next run shown is after 03:00 EDT, never 01:30 EST (an hour before it could run)."""
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        now = dt.datetime(2026, 3, 8, 6, 0, tzinfo=dt.timezone.utc)  # 01:00 EST
        [job] = cronjobs.cron_jobs(AssayHome(tmp_path), "30 2 * * *  assay score\n", now)
        assert job.next_run > now and job.next_run.utcoffset() == dt.timedelta(hours=-4)
        [job] = cronjobs.cron_jobs(AssayHome(tmp_path), "30 1 * * *  assay score\n", now + dt.timedelta(days=238))
        assert job.next_run.isoformat() == "2026-11-01T01:30:00-04:00"  # the first of the fall-back's two 01:30s
    finally:
        monkeypatch.undo()
        time.tzset()

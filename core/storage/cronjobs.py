"""The crontab lines that run assay, with when each runs next and how its last run went.

The Scoring run is meant to be started weekly by cron (docs/scoring.md), and a release check or
an Experiment may be too. A cron job that silently stopped running is the failure nobody sees,
so each line is shown with the newest Command record of what it runs. A Scoring run line is
marked **late** when it was due :data:`GRACE` or more ago and no Scoring run has started since,
though one had before (a line added after its last due time is not late, only never run yet). The crontab is
this user's (``crontab -l``), read as it is; nothing here changes it.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
from assay.storage.commands import all_records, effective_state
from assay.storage.cron_schedule import Schedule, ScheduleError
from assay.storage.home import AssayHome
from assay.storage.records import CommandRecord

GRACE = dt.timedelta(minutes=15)
"""How long after it is due a job may take to show up as a Command before it counts as late."""

WATCHED = "score"
"""The one command whose every run leaves a Command record, so the one a line can be late for: a
release-check that touches no suite, or an Experiment already finished, leaves none."""

RECORDED: dict[str, Callable[[CommandRecord], bool]] = {
    "score": lambda r: r.kind == "scoring",
    "experiment": lambda r: r.kind == "experiment",
    "release-check": lambda r: r.kind == "experiment" and r.release is not None,
}
"""The assay commands that leave a Command record, and how to know their records."""

_ASSAY = re.compile(r"(?:^|[\s;&|(/])(?:assay|python3? -m assay)\s+([a-z][a-z-]*)")
_ENV = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")


@attrs.frozen
class CronJob:
    line: int
    """Its line number in the crontab."""
    schedule: str
    command: str
    runs: str
    """The assay command it starts (``score``, ``release-check``, …)."""
    assay_home: str | None
    """The ASSAY_HOME it sets, when it sets one (unset, assay uses ~/.assay)."""
    other_home: bool
    """Its ASSAY_HOME is not the one read here: its runs are recorded there, not shown here."""
    next_run: dt.datetime | None
    last_due: dt.datetime | None
    """The last time it was due, :data:`GRACE` or more ago: a run should have started by now."""
    last_run: dict[str, Any] | None
    """The newest Command record of what it runs: id, state, outcome, started_at."""
    late: bool
    problem: str = ""
    """Why cron would refuse the line, when it would."""

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        for key in ("next_run", "last_due"):
            out[key] = out[key].isoformat() if out[key] else None
        return out


def read_crontab() -> tuple[str, str]:
    """(this user's crontab, "" ) or ("", why there is none to read)."""
    try:
        done = subprocess.run(["crontab", "-l"], capture_output=True, text=True, timeout=20)
    except FileNotFoundError:
        return "", "crontab is not installed on this machine (Debian: apt-get install cron)"
    except subprocess.TimeoutExpired:
        return "", "crontab -l did not answer within 20 s"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[0] if done.stderr.strip() else f"exit {done.returncode}"
        return "", f"crontab -l: {said}"
    return done.stdout, ""


def listing(home: AssayHome, now: dt.datetime) -> dict[str, Any]:
    """What ``assay cron-jobs --json`` prints and the Console's Cron jobs page shows."""
    text, note = read_crontab()
    return {"note": note, "cron_jobs": [job.to_json() for job in cron_jobs(home, text, now)]}


def cron_jobs(home: AssayHome, crontab: str, now: dt.datetime) -> list[CronJob]:
    """Every line of ``crontab`` that runs assay, in order; ``now`` is an aware time."""
    local_now = now.astimezone().replace(tzinfo=None)
    records = all_records(home)
    env_home: str | None = None
    jobs = []
    for number, raw in enumerate(crontab.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        env = _ENV.match(line)  # a schedule starts with a digit, * or @, never a name
        if env:
            if env.group(1) == "ASSAY_HOME":
                env_home = _env_value(env.group(2))
            continue
        schedule_text, command = _split(line)
        found = _ASSAY.search(command)
        if not found:
            continue
        runs = found.group(1)
        inline = _inline_home(command[:found.start(1)])
        assay_home = inline if inline is not None else env_home
        where = _home_path(assay_home or "~/.assay", shell=inline is not None)  # unset: assay's own default
        other = where != home.root.resolve()
        try:
            schedule, problem = Schedule.parse(schedule_text), ""
        except ScheduleError as e:
            schedule, problem = None, str(e)
        due = schedule.last_due(local_now - GRACE) if schedule else None
        last = _last_run(home, records, runs)
        late = (runs == WATCHED and not other and due is not None and last is not None
                and last["started_at"] < _aware(due))
        jobs.append(CronJob(
            number, schedule_text, command, runs, assay_home, other,
            _aware(schedule.next_after(local_now)) if schedule else None, _aware(due) if due else None,
            None if other else _shown(last), late, problem))
    return jobs


def _split(line: str) -> tuple[str, str]:
    """(schedule, command): a macro takes one field, a clock schedule five."""
    fields = 1 if line.startswith("@") else 5
    parts = line.split(None, fields)
    command = parts[fields] if len(parts) > fields else ""
    # cron ends the command at the first % not escaped (the rest is its stdin), and unescapes \%
    return " ".join(parts[:fields]), re.split(r"(?<!\\)%", command)[0].replace("\\%", "%").strip()


def _last_run(home: AssayHome, records: list[CommandRecord], runs: str) -> dict[str, Any] | None:
    test = RECORDED.get(runs)
    newest = next((r for r in records if test and test(r)), None)  # records come newest first
    if newest is None:
        return None
    return {"id": newest.id, "kind": newest.kind, "state": effective_state(newest, home), "outcome": newest.outcome,
            "started_at": newest.started_at}


def _shown(last: dict[str, Any] | None) -> dict[str, Any] | None:
    return {**last, "started_at": last["started_at"].isoformat()} if last else None


def _aware(moment: dt.datetime) -> dt.datetime:
    """A local wall-clock time as an aware one. In a fall-back hour cron runs at the first of the
    two; in a spring-forward gap the time doesn't exist and cron runs the job just after the jump."""
    first = moment.replace(fold=0).astimezone()
    if first.replace(tzinfo=None) == moment:
        return first
    return max(first, moment.replace(fold=1).astimezone())


def _env_value(text: str) -> str:
    """An environment line's value as cron sets it: outer matching quotes dropped, nothing expanded."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _inline_home(prefix: str) -> str | None:
    """The ASSAY_HOME a shell command sets before running assay (``ASSAY_HOME=… assay``), unquoted."""
    lexer = shlex.shlex(prefix, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # unbalanced quotes: the shell would refuse the line too
        return None
    values = [w.split("=", 1)[1] for w in words if w.startswith("ASSAY_HOME=")]
    return values[-1] if values else None


def _home_path(value: str, *, shell: bool) -> Path:
    """Where a job's runs are recorded: assay expands ``~`` (and a shell expands ``$HOME`` in the
    command, where cron's own environment lines expand nothing); relative to cron's HOME."""
    if shell:
        value = value.replace("${HOME}", "$HOME").replace("$HOME", str(Path.home()))
    path = Path(value).expanduser()
    return (path if path.is_absolute() else Path.home() / path).resolve()


"""A crontab schedule read as Vixie cron reads it (the Cron jobs page's next and last runs)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from assay.storage.cron_schedule import Schedule, ScheduleError

NOW = dt.datetime(2026, 12, 1, 5, 0, 30)  # a Tuesday


def at(text: str) -> tuple[dt.datetime | None, dt.datetime | None]:
    schedule = Schedule.parse(text)
    return schedule.next_after(NOW), schedule.last_due(NOW)


@pytest.mark.parametrize("text, next_run, last_due", [
    ("0 6 * * 1", dt.datetime(2026, 12, 7, 6, 0), dt.datetime(2026, 11, 30, 6, 0)),  # docs/scoring.md's line
    ("0 6 * * mon", dt.datetime(2026, 12, 7, 6, 0), dt.datetime(2026, 11, 30, 6, 0)),
    ("@weekly", dt.datetime(2026, 12, 6, 0, 0), dt.datetime(2026, 11, 29, 0, 0)),  # Sunday midnight
    ("0 0 * * 7", dt.datetime(2026, 12, 6, 0, 0), dt.datetime(2026, 11, 29, 0, 0)),  # 7 is Sunday too
    ("*/20 5 * * *", dt.datetime(2026, 12, 1, 5, 20), dt.datetime(2026, 12, 1, 5, 0)),
    ("15 9-17/4 * * *", dt.datetime(2026, 12, 1, 9, 15), dt.datetime(2026, 11, 30, 17, 15)),
    ("0 0 1 jan *", dt.datetime(2027, 1, 1, 0, 0), dt.datetime(2026, 1, 1, 0, 0)),
    ("0 0 29 2 *", dt.datetime(2028, 2, 29, 0, 0), dt.datetime(2024, 2, 29, 0, 0)),
    ("@hourly", dt.datetime(2026, 12, 1, 6, 0), dt.datetime(2026, 12, 1, 5, 0)),
])
def test_next_and_last_runs(text, next_run, last_due) -> None:
    assert at(text) == (next_run, last_due)


def test_both_day_fields_restricted_means_either_day_runs() -> None:
    """cron's own rule: "0 0 13 * fri" runs on every 13th and on every Friday, not only Friday the 13th."""
    assert at("0 0 13 * fri")[0] == dt.datetime(2026, 12, 4, 0, 0)  # a Friday, not the 13th
    assert at("0 0 13 * *")[0] == dt.datetime(2026, 12, 13, 0, 0)
    assert at("0 0 */2 * fri")[0] == dt.datetime(2026, 12, 11, 0, 0)  # "*/2" starts with *: an odd day and a Friday


def test_a_schedule_that_never_runs_on_a_clock() -> None:
    assert at("0 0 30 2 *") == (None, None)
    assert at("@reboot") == (None, None) and Schedule.parse("@reboot").reboot


@pytest.mark.parametrize("text, message", [
    ("61 * * * *", "minute '61': '61' is not a minute (0-59)"),
    ("0 24 * * *", "hour '24': '24' is not a hour (0-23)"),
    ("0 0 * 13 *", "month '13'"),
    ("0 0 * * 8", "day of week '8'"),
    ("0 0 5-1 * *", "the range 5-1 runs backwards"),
    ("*/0 * * * *", "the step after / must be a whole number above 0"),
    ("0 0 * *", "expected five fields"),
    ("@fortnightly", "unknown macro @fortnightly"),
    ("@DAILY", "unknown macro @DAILY"),
    ("5/10 * * * *", "minute '5/10': a step needs * or a range before it (write 5-59/10)"),
])
def test_a_schedule_cron_would_refuse_says_which_field(text, message) -> None:
    with pytest.raises(ScheduleError, match=re.escape(message)):
        Schedule.parse(text)

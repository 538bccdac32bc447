"""A crontab line's schedule: when it runs next, and when it was last due (the Cron jobs page).

Read as Vixie cron (the cron Debian ships) reads it: five fields (minute, hour, day of month,
month, day of week), each ``*``, a number, a range ``a-b``, a step ``*/n`` or ``a-b/n``, or a
comma list of these (``5/10`` is refused: crons differ on it); month and weekday names (``jan``, ``mon``); 0 and 7 are both Sunday; and
the macros ``@hourly`` … ``@yearly`` and ``@reboot``. When neither day field starts with ``*``, a
day matching either runs (cron's own rule, easy to forget). Times are the machine's local time, as
cron's are.
"""

from __future__ import annotations

import datetime as dt

import attrs

MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
          "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS = (("minute", 0, 59, ()), ("hour", 0, 23, ()), ("day of month", 1, 31, ()),
           ("month", 1, 12, _MONTHS), ("day of week", 0, 7, _WEEKDAYS))
_SEARCH_DAYS = 366 * 9
"""How far to look for a matching day: a day-of-month rule recurs within 8 years (Feb 29 across a
skipped leap year, as in 2100); a weekday rule within a week, and with both either one will do."""


class ScheduleError(ValueError):
    """A schedule cron would refuse, saying which field and why."""


@attrs.frozen
class Schedule:
    text: str
    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    weekdays: frozenset[int] = frozenset()
    any_day: bool = True
    """The day-of-month field starts with ``*`` (so does ``*/2``): then a day must match both day
    fields, as cron has it; when neither starts with ``*``, either will do."""
    any_weekday: bool = True
    reboot: bool = False
    """``@reboot``: it runs when cron starts, never on a clock."""

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """The schedule ``text`` (five fields or a macro), or :class:`ScheduleError`."""
        text = " ".join(text.split())
        if text == "@reboot":
            return cls(text, reboot=True)
        if text.startswith("@") and text not in MACROS:  # cron compares them as written: @DAILY is not one
            raise ScheduleError(f"unknown macro {text} (known: @reboot, {', '.join(MACROS)})")
        fields = MACROS.get(text, text).split()
        if len(fields) != 5:
            raise ScheduleError(f"expected five fields (minute hour day-of-month month day-of-week), got {len(fields)}")
        minutes, hours, days, months, weekdays = (_field(f, *spec) for f, spec in zip(fields, _FIELDS))
        return cls(text, minutes, hours, days, months, frozenset(w % 7 for w in weekdays),
                   any_day=fields[2].startswith("*"), any_weekday=fields[4].startswith("*"))

    def next_after(self, moment: dt.datetime) -> dt.datetime | None:
        """The first time it runs after ``moment`` (a naive local time), or None (never, or @reboot)."""
        start = moment.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        return self._search(start, forward=True)

    def last_due(self, moment: dt.datetime) -> dt.datetime | None:
        """The last time it was due at or before ``moment`` (a naive local time), or None."""
        return self._search(moment.replace(second=0, microsecond=0), forward=False)

    def _search(self, start: dt.datetime, *, forward: bool) -> dt.datetime | None:
        if self.reboot:
            return None
        step = dt.timedelta(days=1 if forward else -1)
        hours, minutes = sorted(self.hours, reverse=not forward), sorted(self.minutes, reverse=not forward)
        day = start.date()
        for _ in range(_SEARCH_DAYS):
            if self._runs_on(day):
                for hour in hours:
                    for minute in minutes:
                        at = dt.datetime(day.year, day.month, day.day, hour, minute)
                        if (at >= start) if forward else (at <= start):
                            return at
            day += step
        return None

    def _runs_on(self, day: dt.date) -> bool:
        if day.month not in self.months:
            return False
        by_date, by_weekday = day.day in self.days, day.isoweekday() % 7 in self.weekdays
        if self.any_day or self.any_weekday:  # cron's rule: a field starting with * joins by "and"
            return by_date and by_weekday
        return by_date or by_weekday


def _field(text: str, name: str, lo: int, hi: int, names: tuple[str, ...]) -> frozenset[int]:
    out: set[int] = set()
    for part in text.split(","):
        span, slash, step_text = part.partition("/")
        if slash and not (step_text.isdigit() and int(step_text) > 0):
            raise ScheduleError(f"{name} '{text}': the step after / must be a whole number above 0")
        step = int(step_text) if slash else 1
        if span == "*":
            first, last = lo, hi
        else:
            first_text, dash, last_text = span.partition("-")
            if slash and not dash:
                raise ScheduleError(f"{name} '{text}': a step needs * or a range before it "
                                    f"(write {first_text}-{hi}/{step_text}): crons differ on {part}")
            first = _value(first_text, name, text, lo, hi, names)
            last = _value(last_text, name, text, lo, hi, names) if dash else first
            if last < first:
                raise ScheduleError(f"{name} '{text}': the range {span} runs backwards")
        out.update(range(first, last + 1, step))
    return frozenset(out)


def _value(token: str, name: str, text: str, lo: int, hi: int, names: tuple[str, ...]) -> int:
    if token.lower() in names:
        return names.index(token.lower()) + (1 if names is _MONTHS else 0)
    if not token.isdigit() or not lo <= int(token) <= hi:
        raise ScheduleError(f"{name} '{text}': '{token}' is not a {name} ({lo}-{hi})")
    return int(token)

"""Parse the dates people type into the booking form."""

from datetime import datetime

FORMATS = ("%Y-%m-%d", "%m/%d/%Y")


def parse_date(text):
    """An ISO date (2024-03-05) or a day-first one (05/03/2024), as a datetime.date."""
    for fmt in FORMATS:
        try:
            return datetime.strptime(text.strip(), fmt).date()
        except ValueError:
            pass
    raise ValueError(f"not a date: {text!r}")

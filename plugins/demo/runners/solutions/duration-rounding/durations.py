"""Format track lengths for the player."""


def format_duration(seconds):
    """M:SS under an hour, H:MM:SS from an hour on, rounded to the nearest second.

    Rounds the total first and only then splits it, so 59.6 s carries into the minutes
    ("1:00") instead of showing as "0:60".
    """
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"

"""Format track lengths for the player."""


def format_duration(seconds):
    """M:SS under an hour, H:MM:SS from an hour on, rounded to the nearest second."""
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    if hours:
        return f"{hours}:{minutes:02d}:{round(secs):02d}"
    return f"{minutes}:{round(secs):02d}"

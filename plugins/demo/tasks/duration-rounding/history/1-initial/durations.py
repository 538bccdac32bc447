"""Format track lengths for the player."""


def format_duration(seconds):
    """M:SS, rounded to the nearest second."""
    minutes, secs = divmod(seconds, 60)
    return f"{int(minutes)}:{round(secs):02d}"

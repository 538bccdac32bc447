"""Numbers for the nightly sensor report."""


def mean(values):
    """The arithmetic mean of `values`, or None when there are none (there is no mean)."""
    if not values:
        return None
    return sum(values) / len(values)


def summary(values):
    """One line of the nightly report; a day without readings says n/a."""
    if not values:
        return "n=0 mean=n/a max=n/a"
    return f"n={len(values)} mean={mean(values):.2f} max={max(values)}"

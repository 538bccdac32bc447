"""Numbers for the nightly sensor report."""


def mean(values):
    """The arithmetic mean of `values`."""
    if not values:
        return None
    return sum(values) / len(values)


def summary(values):
    """One line of the nightly report."""
    return f"n={len(values)} mean={mean(values):.2f} max={max(values)}"

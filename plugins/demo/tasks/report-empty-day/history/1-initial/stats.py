"""Numbers for the nightly sensor report."""


def mean(values):
    """The arithmetic mean of `values`."""
    return sum(values) / len(values)

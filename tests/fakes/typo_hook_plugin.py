"""A plugin whose hook name has a typo: refused rather than silently ignored."""

from assay import hookimpl


@hookimpl
def assay_harnesess():
    return []

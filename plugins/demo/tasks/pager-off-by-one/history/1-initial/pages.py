"""Split a list of items into numbered pages for display."""


def page_count(total, per_page):
    """How many pages `total` items fill at `per_page` items a page."""
    if per_page < 1:
        raise ValueError("per_page must be at least 1")
    return total // per_page

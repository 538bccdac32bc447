"""Split a list of items into numbered pages for display."""


def page_count(total, per_page):
    """How many pages `total` items fill at `per_page` items a page (a partial page counts)."""
    if per_page < 1:
        raise ValueError("per_page must be at least 1")
    return (total + per_page - 1) // per_page


def page(items, number, per_page):
    """The items on page `number`, counting from 1."""
    if not 1 <= number <= page_count(len(items), per_page):
        raise IndexError(f"no page {number}")
    start = (number - 1) * per_page
    return items[start:start + per_page]

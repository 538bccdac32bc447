"""Turn titles into URL slugs."""

import re


def slugify(title):
    """A URL-safe slug: lowercase ASCII words joined by hyphens."""
    ascii_title = title.encode("ascii", "ignore").decode()
    words = re.split(r"[^a-z0-9]+", ascii_title.lower())
    return "-".join(w for w in words if w)


def unique_slug(title, taken):
    """slugify(title), with -2, -3, … appended until it is not in `taken`."""
    slug = candidate = slugify(title)
    n = 2
    while candidate in taken:
        candidate = f"{slug}-{n}"
        n += 1
    return candidate

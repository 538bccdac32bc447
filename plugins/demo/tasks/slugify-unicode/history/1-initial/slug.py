"""Turn titles into URL slugs."""

import re


def slugify(title):
    """A URL-safe slug: lowercase ASCII words joined by hyphens."""
    words = re.split(r"[^a-z0-9]+", title.lower())
    return "-".join(w for w in words if w)

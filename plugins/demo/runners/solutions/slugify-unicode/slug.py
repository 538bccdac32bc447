"""Turn titles into URL slugs."""

import re
import unicodedata


def _without_accents(text):
    """'Crème' → 'Creme': split each letter from its accent (NFKD), then drop the accents."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def slugify(title):
    """A URL-safe slug: lowercase ASCII words joined by hyphens."""
    words = re.split(r"[^a-z0-9]+", _without_accents(title).lower())
    return "-".join(w for w in words if w)


def unique_slug(title, taken):
    """slugify(title), with -2, -3, … appended until it is not in `taken`."""
    slug = candidate = slugify(title)
    n = 2
    while candidate in taken:
        candidate = f"{slug}-{n}"
        n += 1
    return candidate

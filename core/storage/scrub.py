"""Identifying words out of a text a blind Grader reads, and nothing else: the one scrub every
packet uses (the Experiments' model Grader, the Scoring run).

A Grader must not learn who made a submission, but must see all of it: only the words that
name a Harness family, a Model, a Harness version, a session id or an Arm's folder are replaced
with a visible :data:`TOKEN`; every other character stays where it was. Matching runs on a
normalised copy of the text (NFKC, case-folded, zero-width and other format characters gone,
separators optional between a name's parts), so ``ChatGPT``, ``GPT 5``, ``Ｃｌａｕｄｅ`` and
``Clau\u200bde`` are all found; each match is mapped back to the original characters it came from.
The words "baseline" and "candidate" stay (code and findings use them); a Trial's folder
(``candidate-0``, its absolute path) goes.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

TOKEN = "[redacted]"

# Each Harness family's names, as people and tools spell them; a user adds more in the User config.
FAMILY_ALIASES: Mapping[str, tuple[str, ...]] = {
    "claude": ("claude", "claude code", "anthropic", "opus", "sonnet", "haiku"),
    "codex": ("codex", "codex cli", "openai", "chatgpt", "gpt", "o1", "o3", "o4"),
    "opencode": ("opencode", "open code"),
    "kimi": ("kimi", "kimi code", "moonshot"),
}
CONFIG = "config.toml"  # in ASSAY_HOME: [grading.aliases] FAMILY = ["name", ...]

_SEP = r"[ \t_\-./:·]{0,3}"  # what may sit between a name's parts ("GPT-5", "GPT 5", "GPT5")
_VERSION = r"(?:[ \t_\-.]?v?\d+(?:[.\-]\d+)*[a-z]?)?"  # a family name's version ("Opus 4.1", "GPT-4o")
_UUID = r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}"
# Authorship trailers and attributions: all of the rest of the line names ("Co-Authored-By : …" too).
_TRAILER = r"(?:generated with|built with|co-authored-by|assisted-by|generated-by)\b[^\n]*"
_ROBOT = "\U0001F916"
_ARM_SLOT = r"(?<![^\W_])(?:baseline|candidate)-\d+(?![^\W_])"  # a Trial's folder ("candidate-0"), not the word


class AliasError(ValueError):
    """The User config's aliases are malformed (the message names the file and field)."""


def normalise(text: str) -> tuple[str, list[int]]:
    """The text as matched (NFKC, case-folded, format characters dropped) and, for each of its
    characters, the index of the original character it came from."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if unicodedata.category(ch) == "Cf":  # zero-width space/joiners, BOM, soft hyphen, bidi marks
            continue
        for c in unicodedata.normalize("NFKC", ch).casefold():
            out.append(c)
            where.append(i)
    return "".join(out), where


def _parts(name: str) -> list[str]:
    return re.findall(r"[^\W\d_]+|\d+", normalise(name)[0])


def _name_pattern(name: str, versioned: bool) -> str | None:
    """A name matched whole, its parts joined by any separator or none."""
    parts = _parts(name)
    if not parts:
        return None
    short = sum(map(len, parts)) <= 3  # "o3": no separators inside, or "I/O 3" would match
    body = ("" if short else _SEP).join(re.escape(p) for p in parts)
    before = r"(?<![\d.])" if parts[0].isdigit() else r"(?<![^\W_])"
    if versioned:
        return before + body + _VERSION + r"(?![^\W_])"
    return before + body + (r"(?!\.?\d)" if parts[-1].isdigit() else r"(?![^\W_])")


def id_shape(session_id: str) -> str | None:
    """A pattern for ids shaped like this one (the same prefix words, the same run lengths), so the
    shape that names a Harness goes with the id itself. Ids with fewer than 8 letters or digits
    are matched only literally."""
    norm = normalise(session_id)[0]
    if sum(c.isalnum() for c in norm) < 8:
        return None
    pieces = []
    for run in re.split(r"([\-_:])", norm):
        if run in ("-", "_", ":"):
            pieces.append(re.escape(run))
        elif run.isalpha() and len(run) <= 8:
            pieces.append(re.escape(run))
        elif run:
            pieces.append(f"[0-9a-z]{{{len(run)}}}")
    return r"(?<![0-9a-z])" + "".join(pieces) + r"(?![0-9a-z])"


def user_aliases(assay_home: Path | None) -> dict[str, tuple[str, ...]]:
    """``[grading.aliases]`` from the User config: more names for a family, or a new family."""
    path = assay_home / CONFIG if assay_home else None
    if path is None or not path.is_file():
        return {}
    try:
        table = tomllib.loads(path.read_text()).get("grading", {}).get("aliases", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError) as e:
        raise AliasError(f"{path}: [grading.aliases] can't be read ({e})") from None
    if not isinstance(table, dict):
        raise AliasError(f"{path}: [grading.aliases] must be a table of FAMILY = [\"name\", ...]")
    for family, names in table.items():
        if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
            raise AliasError(f"{path}: grading.aliases.{family} must be a list of names")
    return {family: tuple(names) for family, names in table.items()}


class Scrubber:
    """Replaces identifying words in a text with :data:`TOKEN`, keeping everything else."""

    def __init__(self, *, harnesses: Iterable[str] = (), models: Iterable[str] = (), versions: Iterable[str] = (),
                 session_ids: Iterable[str] = (), literals: Iterable[str] = (),
                 aliases: Mapping[str, Sequence[str]] | None = None, trial_shapes: bool = True):
        """``trial_shapes``: also any session-id-shaped (UUID) word and Trial folder name, which only
        an Experiment's texts hold (elsewhere a UUID is more likely a commit or a checksum)."""
        families = {k: list(v) for k, v in FAMILY_ALIASES.items()}
        for family, names in (aliases or {}).items():
            families.setdefault(family, []).extend(names)
        patterns = [_TRAILER, re.escape(_ROBOT), *((_UUID, _ARM_SLOT) if trial_shapes else ())]
        named = [n for names in families.values() for n in names] + list(families) + [h for h in harnesses if h]
        for model in filter(None, models):  # "claude-opus-4-1" also as "opus 4.1"
            parts = _parts(model)
            named += [" ".join(parts[k:]) for k, p in enumerate(parts) if p.isalpha()] or [model]
        named.sort(key=lambda n: len(_parts(n)), reverse=True)  # "claude code" before "claude": the longest wins
        patterns += [p for n in named if (p := _name_pattern(n, versioned=True))]
        for version in filter(None, versions):
            patterns += [p for v in re.findall(r"\d+(?:\.\d+)+", version) if (p := _name_pattern(v, versioned=False))]
        for sid in filter(None, session_ids):
            patterns += [p for p in (id_shape(sid), _name_pattern(sid, versioned=False)) if p]
        patterns += [re.escape(normalise(s)[0]) for s in sorted(filter(None, literals), key=len, reverse=True)]
        self._pattern = re.compile("|".join(f"(?:{p})" for p in patterns))

    def names(self, text: str) -> bool:
        """Whether ``text`` holds anything this scrub would replace."""
        return self(text) != text

    def __call__(self, text: str) -> str:
        norm, where = normalise(text)
        spans: list[tuple[int, int]] = []
        for m in self._pattern.finditer(norm):
            if m.end() > m.start():
                start, end = where[m.start()], where[m.end() - 1] + 1
                if spans and start <= spans[-1][1]:
                    spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
                else:
                    spans.append((start, end))
        out, last = [], 0
        for start, end in spans:
            out += [text[last:start], TOKEN]
            last = end
        out.append(text[last:])
        return "".join(out)

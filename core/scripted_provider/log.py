"""The provider's request log: one JSON line per request, and a reader for assertions.

Every request is logged before it is answered, so once a client has its answer the line is
there. Secrets never reach the file: credential headers keep only their scheme. Checks such as
"was a web tool offered" read the logged request bodies, i.e. exactly what the model was shown.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.scripted_provider import anthropic, chat, openai
from assay.scripted_provider.oauth import fingerprint
from assay.scripted_provider.wire import Api
from assay.storage import files

SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "cookie", "chatgpt-account-id"})
# Claude's WebSearch/WebFetch, Codex's web_search, Anthropic's server tools (web_search_20250305, web_fetch_…),
# OpenCode's webfetch/websearch, Kimi Code's FetchURL/SearchWeb.
WEB_TOOL = re.compile(r"web_?(search|fetch)|fetch_?url|search_?web", re.IGNORECASE)


def redact(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers with lower-case names; a credential keeps only its scheme (``Bearer <redacted>``)."""
    out = {}
    for key, value in headers.items():
        key = key.lower()
        if key in SECRET_HEADERS:
            scheme = value.split(" ", 1)[0] if " " in value else ""
            value = f"{scheme} <redacted>".strip()
        out[key] = value
    return out


def credentials(headers: Mapping[str, str]) -> dict[str, str]:
    """A fingerprint of each credential header's secret (its value past the scheme), so a check can
    tell which credential reached the provider without the log holding it."""
    return {key.lower(): fingerprint(value.split(" ", 1)[-1]) for key, value in headers.items()
            if key.lower() in ("authorization", "x-api-key")}


class LogWriter:
    """Appends entries to the JSONL file, one ``write`` each (``files.append_line``), so the
    server's threads never interleave and a reader sees whole lines or skips a torn last one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()

    def write(self, entry: dict[str, Any]) -> None:
        files.append_line(self.path, {"time": dt.datetime.now(dt.timezone.utc).isoformat(), **entry})


class ProviderLog:
    """The logged requests of one provider, read back from its JSONL file."""

    def __init__(self, path: Path, apis: tuple[Api, ...] = (anthropic, openai, chat)) -> None:
        self.path = path
        self._apis = {api.name: api for api in apis}

    def entries(self) -> list[dict[str, Any]]:
        return files.read_lines(self.path)  # a line still being written is skipped, not an error

    def model_requests(self, api: str | None = None) -> list[dict[str, Any]]:
        """Requests to a model endpoint (``anthropic``, ``openai``, ``chat``, or any), in arrival order."""
        return [e for e in self.entries() if e.get("api") and (api is None or e["api"] == api)]

    def turns(self, api: str | None = None) -> int:
        """Model turns answered (tool calls or text): failure answers and retries don't count."""
        return sum(1 for e in self.model_requests(api) if e["answer"]["step"] in ("calls", "text"))

    def offered_tools(self, api: str | None = None) -> set[str]:
        """Every tool name offered to the model in any request."""
        return {name for e in self.model_requests(api) for name in self._apis[e["api"]].offered_tools(e["body"])}

    def credentials(self) -> set[str]:
        """The fingerprints of every credential any request carried (:func:`credentials`)."""
        return {value for e in self.entries() for value in (e.get("credentials") or {}).values()}

    def web_tools_offered(self, api: str | None = None) -> set[str]:
        """The offered tools that search or fetch the web; empty when web access is off."""
        return {name for name in self.offered_tools(api) if WEB_TOOL.search(name)}

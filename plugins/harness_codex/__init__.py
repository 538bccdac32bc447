"""The Codex Harness (``codex``).

Implements ``assay_harnesses``. Its session command, fresh home, stream decoding and void
causes land with roadmap step 5; until then it registers and says so when used.
"""

from __future__ import annotations

from pathlib import Path

from assay import hookimpl
from assay.protocols import HarnessBinary, Invocation, Pending, SessionRequest, StreamDecoder


class CodexHarness(Pending):
    name = "codex"
    kind_label = "harness"
    roadmap = "roadmap step 5: the Claude Code and Codex Harnesses"
    provider_hosts = ("api.openai.com", "chatgpt.com")

    def locate(self) -> HarnessBinary:
        raise self._pending()

    def login_present(self, assay_home: Path) -> bool:
        raise self._pending()

    def invocation(self, request: SessionRequest) -> Invocation:
        raise self._pending()

    def decoder(self) -> StreamDecoder:
        raise self._pending()


@hookimpl
def assay_harnesses() -> list[CodexHarness]:
    return [CodexHarness()]

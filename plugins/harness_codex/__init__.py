"""The Codex Harness (``codex``): ``codex exec --json``.

Implements ``assay_harnesses``. The login is the user's own ``auth.json``, bound read-write in
place; web search is disabled; a Stop sends SIGINT (Codex interrupts its turn), then SIGTERM.
"""

from __future__ import annotations

import signal
from pathlib import Path

from assay import hookimpl
from assay.harnesskit import install_root, locate_binary
from assay.plugins.harness_codex import command
from assay.plugins.harness_codex.stream import CodexDecoder
from assay.protocols import HarnessBinary, Invocation, SessionRequest


class CodexHarness:
    name = "codex"
    provider_hosts = ("api.openai.com", "chatgpt.com")

    def locate(self) -> HarnessBinary:
        return locate_binary("codex", install="npm install -g @openai/codex")

    def login_present(self, assay_home: Path) -> bool:
        return command.real_auth() is not None

    def invocation(self, request: SessionRequest) -> Invocation:
        auth = command.fill_home(request)
        return Invocation(
            argv=command.argv(request), cwd=request.repository, env=command.environment(request),
            read_only=(install_root(request.binary.path),),
            read_write=(request.repository, request.home, *((auth,) if auth else ())),
            hosts=self.provider_hosts, stop_signals=(int(signal.SIGINT), int(signal.SIGTERM)),
        )

    def decoder(self) -> CodexDecoder:
        return CodexDecoder()


@hookimpl
def assay_harnesses() -> list[CodexHarness]:
    return [CodexHarness()]

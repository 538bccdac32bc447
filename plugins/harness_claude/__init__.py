"""The Claude Code Harness (``claude``): ``claude -p --output-format stream-json``.

Implements ``assay_harnesses``. The login is a long-lived token (``assay setup``) passed as
``CLAUDE_CODE_OAUTH_TOKEN``; web search and fetch are denied; a Stop sends SIGTERM. It can be
routed to a scripted provider (:class:`assay.hooks.protocols.RoutableHarness`).
"""

from __future__ import annotations

import signal
from pathlib import Path

from assay import hookimpl
from assay.hooks.protocols import HarnessBinary, Invocation, ProviderRoute, SessionRequest
from assay.plugins.harness_claude import command
from assay.plugins.harness_claude.stream import ClaudeDecoder
from assay.sessions import credentials
from assay.sessions.harnesskit import locate_binary, routed, session_invocation


class ClaudeHarness:
    name = "claude"
    provider_hosts = ("api.anthropic.com",)
    api_host = "api.anthropic.com"
    logins = (credentials.CLAUDE_TOKEN,)  # the credentials.toml entry its login is read from

    def locate(self) -> HarnessBinary:
        return locate_binary("claude", install="npm install -g @anthropic-ai/claude-code")

    def login_present(self, assay_home: Path) -> bool:
        return command.oauth_token(assay_home) is not None

    def invocation(self, request: SessionRequest) -> Invocation:
        command.fill_home(request)
        return session_invocation(request, command.argv(request), command.environment(request),
                                  hosts=self.provider_hosts, stop_signals=(signal.SIGTERM,))

    def routed_invocation(self, request: SessionRequest, route: ProviderRoute) -> Invocation:
        return routed(self.invocation(request), route, command.route_environment(route))

    def decoder(self) -> ClaudeDecoder:
        return ClaudeDecoder()


@hookimpl
def assay_harnesses() -> list[ClaudeHarness]:
    return [ClaudeHarness()]

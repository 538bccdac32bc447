"""The Claude Code Harness (``claude``): ``claude -p --output-format stream-json``.

Implements ``assay_harnesses``. The login is a long-lived token (``assay setup``) passed as
``CLAUDE_CODE_OAUTH_TOKEN`` — under a credential broker a stand-in for it; web search and fetch
are denied; a Stop sends SIGTERM. It can be routed to a scripted provider
(:class:`assay.hooks.protocols.RoutableHarness`).
"""

from __future__ import annotations

import signal
from pathlib import Path

from assay import hookimpl
from assay.hooks.protocols import HarnessBinary, Invocation, Login, ProviderRoute, SessionRequest
from assay.plugins.harness_claude import command
from assay.plugins.harness_claude.stream import ClaudeDecoder
from assay.sessions import credentials
from assay.sessions.harnesskit import install_paths, locate_binary, routed
from assay.sessions.logins import FixedLogin, place


class ClaudeHarness:
    name = "claude"
    provider_hosts = ("api.anthropic.com",)
    provider_name = "anthropic"  # gen_ai.provider.name in its Session traces
    api_host = "api.anthropic.com"
    stored_logins = (credentials.CLAUDE_TOKEN,)  # the credentials.toml entry its login is read from

    def locate(self) -> HarnessBinary:
        return locate_binary("claude", install="npm install -g @anthropic-ai/claude-code")

    def login_present(self, assay_home: Path) -> bool:
        return command.oauth_token(assay_home) is not None

    def invocation(self, request: SessionRequest) -> Invocation:
        return self._invocation(request, command.login(request.assay_home))

    def routed_invocation(self, request: SessionRequest, route: ProviderRoute) -> Invocation:
        login = FixedLogin({command.TOKEN_SLOT: route.api_key}) if route.api_key else command.login(request.assay_home)
        return routed(self._invocation(request, login), route, command.route_environment(route))

    def _invocation(self, request: SessionRequest, login: Login) -> Invocation:
        command.fill_home(request)
        placed = place(login, request.brokered)
        return Invocation(
            argv=command.argv(request), cwd=request.repository,
            env=command.environment(request, placed.values.get(command.TOKEN_SLOT)),
            read_only=install_paths(request.binary.path), read_write=(request.repository, request.home),
            hosts=self.provider_hosts, stop_signals=(int(signal.SIGTERM),),
            broker=placed.broker(self.provider_hosts, ca_variables=command.CA_VARIABLES),
        )

    def decoder(self) -> ClaudeDecoder:
        return ClaudeDecoder()


@hookimpl
def assay_harnesses() -> list[ClaudeHarness]:
    return [ClaudeHarness()]

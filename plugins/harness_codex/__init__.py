"""The Codex Harness (``codex``): ``codex exec --json``.

Implements ``assay_harnesses``. The login is the user's own ``auth.json``, bound read-write in
place; web search is disabled; a Stop sends SIGINT (Codex interrupts its turn), then SIGTERM. It
can be routed to a scripted provider (:class:`assay.hooks.protocols.RoutableHarness`).
"""

from __future__ import annotations

import signal
from pathlib import Path

import attrs
from assay import hookimpl
from assay.hooks.protocols import HarnessBinary, Invocation, ProviderRoute, SessionRequest
from assay.plugins.harness_codex import command
from assay.plugins.harness_codex.stream import CodexDecoder
from assay.sessions.harnesskit import locate_binary, routed, session_invocation


class CodexHarness:
    name = "codex"
    provider_hosts = ("api.openai.com", "chatgpt.com")
    api_host = "api.openai.com"

    def locate(self) -> HarnessBinary:
        return locate_binary("codex", install="npm install -g @openai/codex")

    def login_present(self, assay_home: Path) -> bool:
        return command.real_auth() is not None

    def invocation(self, request: SessionRequest) -> Invocation:
        return self._invocation(request, login=True)

    def routed_invocation(self, request: SessionRequest, route: ProviderRoute) -> Invocation:
        """Codex on a custom provider at ``route`` (no real login bound), with a model name outside
        its catalog, for which Codex offers its classic function tools (``exec_command``)."""
        request = attrs.evolve(request, model=command.scripted_model(request.model))
        invocation = self._invocation(request, login=False, settings=command.route_settings(route))
        # only the scripted API: no tunnel to the real login host from an offline check
        invocation = attrs.evolve(invocation, hosts=(self.api_host,))
        return routed(invocation, route, command.route_environment(route))

    def _invocation(self, request: SessionRequest, *, login: bool, settings: tuple[str, ...] = ()) -> Invocation:
        auth = command.fill_home(request, login=login)
        return session_invocation(request, command.argv(request, settings), command.environment(request),
                                  hosts=self.provider_hosts, stop_signals=(signal.SIGINT, signal.SIGTERM),
                                  logins=(auth,) if auth else ())

    def decoder(self) -> CodexDecoder:
        return CodexDecoder()


@hookimpl
def assay_harnesses() -> list[CodexHarness]:
    return [CodexHarness()]

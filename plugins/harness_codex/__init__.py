"""The Codex Harness (``codex``): ``codex exec --json``.

Implements ``assay_harnesses``. The login is the user's own ``auth.json``: under a credential
broker each Trial gets a copy holding stand-ins, else it is bound read-write in place; web search
is disabled; a Stop sends SIGINT (Codex interrupts its turn), then SIGTERM. It
can be routed to a scripted provider (:class:`assay.hooks.protocols.RoutableHarness`).
"""

from __future__ import annotations

import signal
from pathlib import Path

import attrs
from assay import hookimpl
from assay.hooks.protocols import HarnessBinary, Invocation, Login, ProviderRoute, SessionRequest
from assay.plugins.harness_codex import command
from assay.plugins.harness_codex.login import TOKEN_FIELDS, TOKEN_URL
from assay.plugins.harness_codex.stream import CodexDecoder
from assay.sessions.harnesskit import install_paths, locate_binary, routed
from assay.sessions.logins import FixedLogin, place

TOKEN_HOST = "auth.openai.com"


class CodexHarness:
    name = "codex"
    provider_hosts = ("api.openai.com", "chatgpt.com", TOKEN_HOST)
    provider_name = "openai"  # gen_ai.provider.name in its Session traces
    api_host = "api.openai.com"

    def locate(self) -> HarnessBinary:
        return locate_binary("codex", install="npm install -g @openai/codex")

    def login_present(self, assay_home: Path) -> bool:
        return command.real_auth() is not None

    def invocation(self, request: SessionRequest) -> Invocation:
        return self._invocation(request, command.user_login(), self.provider_hosts)

    def routed_invocation(self, request: SessionRequest, route: ProviderRoute) -> Invocation:
        """Codex on a custom provider at ``route``, with a model name outside its catalog, for which
        Codex offers its classic function tools (``exec_command``); logged in with the route's key
        (only the scripted API is reached: no tunnel to the real login host from an offline check)
        or, without one, the user's ``auth.json`` (and its token host, for refreshes)."""
        request = attrs.evolve(request, model=command.scripted_model(request.model))
        if route.api_key:
            login, hosts = FixedLogin({command.ROUTE_KEY_ENV: route.api_key}), (self.api_host,)
        else:
            login, hosts = command.user_login(), (self.api_host, TOKEN_HOST)
        invocation = self._invocation(request, login, hosts, settings=command.route_settings(route))
        return routed(invocation, route, command.route_environment(route))

    def _invocation(self, request: SessionRequest, login: Login | None, hosts: tuple[str, ...],
                    settings: tuple[str, ...] = ()) -> Invocation:
        placed = place(login, request.brokered)
        auth = command.fill_home(request, login, placed)
        return Invocation(
            argv=command.argv(request, settings), cwd=request.repository, env=command.environment(request, placed),
            read_only=install_paths(request.binary.path),
            read_write=(request.repository, request.home, *((auth,) if auth else ())),
            hosts=hosts, stop_signals=(int(signal.SIGINT), int(signal.SIGTERM)),
            broker=placed.broker(hosts, ca_variables=command.CA_VARIABLES, token_urls=(TOKEN_URL,),
                                 token_fields=TOKEN_FIELDS),
        )

    def decoder(self) -> CodexDecoder:
        return CodexDecoder()

    def usage_reports(self, home: Path) -> list[Path]:
        """The session's rollouts, ``CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``: where Codex
        keeps its rate-limit reports (:meth:`CodexDecoder.feed_report`)."""
        return command.rollouts(home)


@hookimpl
def assay_harnesses() -> list[CodexHarness]:
    return [CodexHarness()]

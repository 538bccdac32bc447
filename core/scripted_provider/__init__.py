"""A scripted model provider: a local server that plays a model for the real agent CLIs.

It speaks the Anthropic Messages API (Claude Code) and the OpenAI Responses API (Codex) with
streaming, plays a script of turns — tool calls, then a final text — with rate-limit and
server-error steps between them, and logs every request (tools offered included). It lets the
real binaries run whole sessions offline, so Harness checks and end-to-end Experiments test what
ships rather than a fake. The protocol and script format: docs/scripted-provider.md.
"""

from assay.scripted_provider.log import ProviderLog
from assay.scripted_provider.script import (
    Call,
    RateLimit,
    Script,
    ServerError,
    Turn,
    Usage,
    load_script,
    parse_script,
)
from assay.scripted_provider.server import ScriptedProvider

__all__ = [
    "Call", "ProviderLog", "RateLimit", "Script", "ScriptedProvider", "ServerError", "Turn", "Usage",
    "load_script", "parse_script",
]

"""Helpers for Harness tests: a session request, decoding lines, and a real session run under trio."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from functools import partial
from pathlib import Path

import attrs
import trio
from assay.hooks.protocols import (
    Harness,
    HarnessBinary,
    Invocation,
    ProcessResult,
    SessionOutcome,
    SessionRequest,
    StreamDecoder,
)
from assay.plugins.sandbox_none.backend import NoneBackend
from assay.scripted_provider import oauth

STREAMS = Path(__file__).parent / "fixtures" / "streams"
FAST = NoneBackend(grace=0.5, poll=0.05, drain=1.0)
ENDED = ProcessResult(exit_code=0, backend="none", duration=1.0)
FAILED = ProcessResult(exit_code=1, backend="none", duration=1.0)
TIMED_OUT = ProcessResult(exit_code=-9, backend="none", duration=60.0, timed_out=True)


def recorded(name: str) -> list[str]:
    return (STREAMS / name).read_text().splitlines()


def lines(*events: dict | str) -> list[str]:
    """Stream lines: dicts as JSON, strings as they are (for malformed lines)."""
    return [e if isinstance(e, str) else json.dumps(e) for e in events]


def decode(decoder: StreamDecoder, stream: Iterable[str], process: ProcessResult = ENDED) -> SessionOutcome:
    for line in stream:
        decoder.feed(line)
    return decoder.finish(process)


def request(tmp_path: Path, binary: HarnessBinary, **kw) -> SessionRequest:
    """A session in a fresh repository and home under ``tmp_path``."""
    repo, home = tmp_path / "repo", tmp_path / "trial-home"
    repo.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    return SessionRequest(repository=repo, home=home, prompt="Fix the bug.", binary=binary, **kw)


def stray_home(tmp_path: Path, monkeypatch, strays: dict[str, str]) -> Path:
    """A caller environment of only PATH, LANG, ``strays`` (variables no session may see) and a
    real-looking user home, which it returns; ASSAY_HOME is ``tmp_path/assay-home``."""
    for key in list(os.environ):
        if key not in ("PATH", "LANG"):
            monkeypatch.delenv(key)
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "assay-home"))
    for key, value in strays.items():
        monkeypatch.setenv(key, value)
    return home


def offline(invocation: Invocation) -> Invocation:
    """The same session with no network: a fresh network namespace where unshare can make one,
    and a dead proxy, so every connection fails at once instead of after DNS timeouts."""
    dead = "http://127.0.0.1:9"
    env = {**invocation.env, "HTTPS_PROXY": dead, "HTTP_PROXY": dead, "ALL_PROXY": dead}
    argv = invocation.argv
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        argv = (unshare, "-n", "--", *argv)
    return attrs.evolve(invocation, argv=argv, env=env)


def run_session(
    harness: Harness, req: SessionRequest, *, timeout: float = 30, backend: NoneBackend = FAST,
    adjust=lambda invocation: invocation,
) -> tuple[SessionOutcome, ProcessResult, list[str]]:
    """One real session: the Harness describes it, the pass-through backend runs it, the Harness reads it."""
    invocation = adjust(harness.invocation(req))
    decoder = harness.decoder()
    seen: list[str] = []

    def on_line(line: str) -> None:
        seen.append(line)
        decoder.feed(line)

    process = trio.run(partial(backend.run, invocation, timeout=timeout, on_line=on_line))
    return decoder.finish(process), process, seen


# What `kimi login` wrote into config.toml for the default endpoint (its models table left out).
KIMI_LOGIN_CONFIG = '''default_model = "kimi-code/kimi-for-coding"

[providers."managed:kimi-code"]
type = "kimi"
api_key = ""
base_url = "https://api.kimi.com/coding/v1"

[providers."managed:kimi-code".oauth]
storage = "file"
key = "oauth/kimi-code"
'''


def kimi_login(kimi_home: Path, *, name: str = "kimi-code", config: str = KIMI_LOGIN_CONFIG,
               expires_in: float = 900, revoked: bool = False) -> Path:
    """A user's ``kimi login`` in ``kimi_home``: its token file (returned) and config.toml
    (:func:`assay.scripted_provider.oauth.kimi_login`)."""
    (kimi_home / "credentials").mkdir(parents=True, exist_ok=True)
    (kimi_home / "config.toml").write_text(config)
    token = kimi_home / "credentials" / f"{name}.json"
    token.write_text(json.dumps(oauth.kimi_login(expires_in, revoked=revoked), indent=2) + "\n")
    token.chmod(0o600)
    return token

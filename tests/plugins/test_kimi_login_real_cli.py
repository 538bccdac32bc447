"""The real ``kimi`` (2.1.0) runs whole Trials on Kimi Code's own login against the scripted provider.

Issue 36: "``[kimi]`` takes Kimi Code's login or key", provisioned "by the credential rules the
sandbox issue sets: never the user's files shared read-write". Each session is a Trial as an
Experiment runs one (:class:`assay.harnesscheck.bench.Bench`), its login ``[kimi] login = true``:
the user's ``~/.kimi-code/credentials/kimi-code.json`` laid out as ``kimi login`` leaves it.
Under bwrap the scripted provider answers for Kimi Code's managed API (``api.kimi.com``) and its
OAuth host (``auth.kimi.com``), so the CLI's real https endpoints are used, through the relay, the
proxy and the credential broker; the pass-through backend has no routing, so there the scripted
provider on 127.0.0.1 is the login's endpoint.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import trio
from assay.harnesscheck.bench import Bench, Session
from assay.hooks.protocols import SandboxBackend
from assay.plugins.harness_kimi import KimiHarness
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.scripted_provider import Script, Turn, oauth
from assay.scripted_provider.oauth import fingerprint
from assay.scripted_provider.routing import ScriptedProviders
from assay.sessions import credentials
from assay.storage.records import Outcome, VoidCause

from tests.harness_fixtures import FAST, kimi_login
from tests.plugins.test_broker_real_clis import kimi_refreshed  # noqa: F401 - a fixture
from tests.sandbox_fixtures import bwrap_unavailable

pytestmark = pytest.mark.slow
TOKENS = ("access_token", "refresh_token")


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's home with Kimi Code on PATH and ``[kimi] login = true``; the kimi home is returned."""
    try:
        KimiHarness().locate()
    except Exception as e:  # not installed, or the node on PATH is too old for it
        pytest.skip(f"the real `kimi` can't run here: {e}")
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KIMI_CODE_HOME", raising=False)
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "assay-home"))
    (tmp_path / "assay-home").mkdir()
    credentials.put(tmp_path / "assay-home" / "credentials.toml", credentials.KIMI_LOGIN, True)
    return home / ".kimi-code"


def trial(backend: SandboxBackend, folder: Path, *, answered: bool = True) -> Session:
    """One whole Trial of the real ``kimi`` on the user's own login; its script: one answer (which,
    with ``answered``, it must have given)."""
    harness = KimiHarness()

    async def run() -> Session:
        with ScriptedProviders(backend, api_key=None) as providers:
            bench = Bench(harness, harness.locate(), providers, folder / "trials", timeout=90,
                          assay_home=Path(os.environ["ASSAY_HOME"]))
            return await bench.run("login", Script(turns=(Turn(text="Logged in."),)), "Say so.")

    session = trio.run(run)
    assert session.outcome is not None
    assert session.outcome.final_message == "Logged in." or not answered, (
        session.outcome, (session.folder / "session.log").read_text()[-2000:])
    return session


def trial_copy(session: Session, name: str = "kimi-code") -> dict:
    return json.loads((session.home / ".kimi-code" / "credentials" / f"{name}.json").read_text())


def test_pass_through_the_cli_takes_its_copy_of_the_login_and_the_user_s_file_is_unchanged(
    user: Path, tmp_path: Path
) -> None:
    token = kimi_login(user)
    before = token.read_bytes()
    session = trial(FAST, tmp_path)
    real = json.loads(before)
    [request] = session.provider.model_requests("chat")
    assert request["path"] == "/coding/v1/chat/completions"  # Kimi Code's managed API, not Moonshot's
    assert request["credentials"] == {"authorization": fingerprint(real["access_token"])}
    [copy] = (session.home / ".kimi-code" / "credentials").iterdir()  # named for the route's endpoint
    assert copy.name.startswith("kimi-code-env-")
    assert json.loads(copy.read_text())["refresh_token"] == real["refresh_token"]
    assert token.read_bytes() == before


@pytest.mark.skipif(bool(bwrap_unavailable()), reason=bwrap_unavailable() or "")
def test_under_bwrap_the_broker_sends_the_real_token_the_trial_holds_stand_ins_the_user_s_file_is_unchanged(
    user: Path, tmp_path: Path
) -> None:
    token = kimi_login(user)
    before = token.read_bytes()
    session = trial(BwrapBackend(), tmp_path)
    real = json.loads(before)
    assert session.provider.credentials() == {fingerprint(real["access_token"])}  # the real one on the wire
    assert not [e for e in session.provider.entries() if e["path"] in oauth.PATHS]  # fresh: no refresh
    inside = trial_copy(session)
    for slot in TOKENS:
        assert inside[slot] != real[slot] and len(inside[slot]) == len(real[slot])
    hosts = {c["target"].rsplit(":", 1)[0] for c in session.proxy() if c["allowed"]}
    assert hosts <= {"api.kimi.com", "auth.kimi.com"} and "api.kimi.com" in hosts, hosts
    assert token.read_bytes() == before


def test_under_bwrap_a_refresh_goes_through_the_broker_the_user_keeps_the_new_tokens_the_trial_stand_ins(
    kimi_refreshed: tuple[Session, Path, dict]
) -> None:
    """Kimi Code refreshes an access token with under max(300 s, half its life) left, at
    auth.kimi.com/api/oauth/token, and its refresh token rotates: the broker sends the real one,
    keeps what the provider issued in the user's file (outside the sandbox) and hands the Trial
    stand-ins, which Kimi Code writes into the Trial's copy. Its Trial is the one
    test_broker_real_clis.py's Kimi Code test reads (run once for both): this Trial, a probe's turn
    before its answer."""
    session, token, real = kimi_refreshed
    [refresh] = [e for e in session.provider.entries() if e["path"] in oauth.PATHS]
    assert refresh["path"] == "/api/oauth/token" and refresh["answer"]["status"] == 200
    assert refresh["body"]["refresh_token"] == fingerprint(real["refresh_token"])  # the real one went out
    after = json.loads(token.read_text())
    assert {slot: fingerprint(after[slot]) for slot in TOKENS} == {s: refresh["issued"][s] for s in TOKENS}
    assert after["scope"] == real["scope"] and oct(token.stat().st_mode & 0o777) == "0o600"
    assert session.provider.credentials() == {refresh["issued"]["access_token"]}  # the new token asked the model
    inside = trial_copy(session)
    reals = {fingerprint(v) for v in (*(real[s] for s in TOKENS), *(after[s] for s in TOKENS))}
    assert not {fingerprint(inside[s]) for s in TOKENS} & reals
    assert inside["expires_at"] > real["expires_at"]  # Kimi Code wrote the refreshed copy itself


@pytest.mark.parametrize("backend", ["none", "bwrap"])
def test_a_refused_refresh_voids_the_trial_and_leaves_the_user_s_file_as_it_was(
    user: Path, tmp_path: Path, backend: str
) -> None:
    """Spec 977: a login that failed is a void Trial. Kimi Code, refused a refresh, overwrites its
    token file with an empty one (its "revoked" mark): the Trial's copy, never the user's file."""
    if backend == "bwrap" and bwrap_unavailable():
        pytest.skip(bwrap_unavailable())
    token = kimi_login(user, expires_in=-60, revoked=True)
    before = token.read_bytes()
    session = trial(FAST if backend == "none" else BwrapBackend(), tmp_path, answered=False)
    assert session.outcome is not None
    assert (session.outcome.outcome, session.outcome.void_cause) == (Outcome.VOID, VoidCause.LOGIN_FAILED)
    [refused] = [e for e in session.provider.entries() if e["path"] in oauth.PATHS]
    assert refused["answer"] == {"status": 401, "step": "token_refused"}
    assert not session.provider.model_requests()
    [copy] = (session.home / ".kimi-code" / "credentials").iterdir()
    assert json.loads(copy.read_text())["access_token"] == ""  # Kimi Code's mark of a revoked login
    assert token.read_bytes() == before

"""Kimi Code's own login (``[kimi] login``) provisioned into a Trial's fresh home (issue 36:
"``[kimi]`` takes Kimi Code's login or key"), as Codex's ``auth.json`` is: the Trial's own copy,
stand-ins under a credential broker, never the user's file bound in.

The user's login here is laid out as the real ``kimi login`` (2.1.0) leaves it (run against a
local device-code server: docs/harnesses.md): ``credentials/kimi-code.json`` and the
``managed:kimi-code`` provider in ``config.toml``.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import attrs
import pytest
from assay.hooks.protocols import HarnessBinary, ProviderRoute
from assay.plugins.harness_kimi import KimiHarness
from assay.plugins.harness_kimi.login import GLOBAL, MAINLAND, endpoint
from assay.sessions import credentials

from tests.harness_fixtures import KIMI_LOGIN_CONFIG as LOGIN_CONFIG
from tests.harness_fixtures import kimi_login, request, stray_home

BINARY = HarnessBinary("/usr/lib/node_modules/@moonshot-ai/kimi-code/dist/main.mjs", "2.1.0")
@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user with a Kimi Code login in ~/.kimi-code and ``[kimi] login = true``; returns the token file."""
    home = stray_home(tmp_path, monkeypatch, {"KIMI_API_KEY": "sk-leak"})
    (tmp_path / "assay-home").mkdir()
    credentials.put(tmp_path / "assay-home" / "credentials.toml", credentials.KIMI_LOGIN, True)
    return kimi_login(home / ".kimi-code")


def login_request(tmp_path: Path, **kw):
    return request(tmp_path, BINARY, assay_home=tmp_path / "assay-home", **kw)


def test_the_endpoint_s_file_name_is_kimi_code_s_own() -> None:
    """Kimi Code names a token file by the endpoint it is for: `kimi-code` for the default one, else
    `kimi-code-env-` + 16 hex of SHA-256 of {"oauthHost","baseUrl"} (its file for a login at
    http://127.0.0.1:18765 was kimi-code-env-43bdb7cf2153aa5d.json)."""
    assert MAINLAND.storage_name == "kimi-code"
    assert endpoint("http://127.0.0.1:18765/", "http://127.0.0.1:18765/coding/v1").storage_name == \
        "kimi-code-env-43bdb7cf2153aa5d"
    assert GLOBAL.storage_name == "kimi-code-env-0e4f99c69cc27850"
    assert MAINLAND.hosts == ("api.kimi.com", "auth.kimi.com")


def test_the_user_s_login_reaches_the_trial_s_home_as_its_own_copy(tmp_path: Path, user: Path) -> None:
    """Issue 30's rule: login state is copied per Trial by an allowlist of keys."""
    user.write_text(json.dumps({**json.loads(user.read_text()), "note": "not a login field"}))
    before = user.read_bytes()
    inv = KimiHarness().invocation(login_request(tmp_path, effort="high"))
    home = tmp_path / "trial-home" / ".kimi-code"
    copy = home / "credentials" / "kimi-code.json"
    assert not copy.is_symlink() and json.loads(copy.read_text()) == {
        k: v for k, v in json.loads(before).items() if k != "note"}
    assert oct(copy.stat().st_mode & 0o777) == "0o600"
    config = tomllib.loads((home / "config.toml").read_text())
    provider = config["providers"]["managed:kimi-code"]
    assert provider["base_url"] == "https://api.kimi.com/coding/v1" and provider["api_key"] == ""
    assert provider["oauth"] == {"storage": "file", "key": "oauth/kimi-code", "oauth_host": "https://auth.kimi.com"}
    assert config["default_model"] == "kimi-code/kimi-for-coding"
    assert config["models"]["kimi-code/kimi-for-coding"]["provider"] == "managed:kimi-code"
    assert config["tools"] == {"disabled": ["WebSearch", "FetchURL"]}
    assert not any(k.startswith("KIMI_MODEL_") and k != "KIMI_MODEL_THINKING_EFFORT" for k in inv.env)
    assert inv.env["KIMI_MODEL_THINKING_EFFORT"] == "high" and "KIMI_API_KEY" not in inv.env
    assert inv.hosts == ("api.kimi.com", "auth.kimi.com")
    assert not any(user.is_relative_to(p) or p == user for p in inv.read_write)  # the user's file is not bound in
    assert inv.broker is None  # not brokered: the copy holds the real tokens
    assert user.read_bytes() == before


def test_under_a_credential_broker_the_trial_s_copy_holds_stand_ins(tmp_path: Path, user: Path) -> None:
    """Issue 30's rule: no secret of the user's is readable inside a sandbox; a refresh goes to
    Kimi Code's token URL through the broker, which keeps the new tokens outside."""
    real = json.loads(user.read_text())
    inv = KimiHarness().invocation(attrs.evolve(login_request(tmp_path), brokered=True))
    copy = json.loads((tmp_path / "trial-home" / ".kimi-code" / "credentials" / "kimi-code.json").read_text())
    for slot in ("access_token", "refresh_token"):
        assert copy[slot] != real[slot] and len(copy[slot]) == len(real[slot])
    assert copy["expires_at"] == real["expires_at"]
    assert inv.broker is not None
    assert inv.broker.stand_ins == {copy["access_token"]: "access_token", copy["refresh_token"]: "refresh_token"}
    assert inv.broker.token_urls == ("https://auth.kimi.com/api/oauth/token",)
    assert inv.broker.hosts == ("api.kimi.com", "auth.kimi.com")
    home_text = "".join(p.read_text() for p in (tmp_path / "trial-home").rglob("*") if p.is_file())
    assert real["access_token"] not in home_text and real["refresh_token"] not in home_text
    assert real["access_token"] not in " ".join(inv.env.values())


def test_a_named_login_file_brings_its_own_endpoint(tmp_path: Path, user: Path) -> None:
    """A login made with `kimi login --region global` in another Kimi home, named by its path."""
    other = tmp_path / "assay-kimi"
    config = LOGIN_CONFIG.replace("api.kimi.com", "api.kimi.ai").replace(
        'key = "oauth/kimi-code"', f'key = "oauth/{GLOBAL.storage_name}"\noauth_host = "https://auth.kimi.ai"')
    token = kimi_login(other, name=GLOBAL.storage_name, config=config)
    credentials.put(tmp_path / "assay-home" / "credentials.toml", credentials.KIMI_LOGIN, str(token))
    inv = KimiHarness().invocation(attrs.evolve(login_request(tmp_path), brokered=True))
    assert inv.hosts == ("api.kimi.ai", "auth.kimi.ai")
    assert inv.broker is not None and inv.broker.token_urls == ("https://auth.kimi.ai/api/oauth/token",)
    assert (tmp_path / "trial-home" / ".kimi-code" / "credentials" / f"{GLOBAL.storage_name}.json").is_file()


def test_a_route_on_loopback_becomes_the_login_s_endpoint(tmp_path: Path, user: Path) -> None:
    """The pass-through backend has no routing: the scripted provider is the login's endpoint, and
    the token file gets the name Kimi Code gives that endpoint."""
    route = ProviderRoute("http://127.0.0.1:18765", None)
    inv = KimiHarness().routed_invocation(login_request(tmp_path), route)
    home = tmp_path / "trial-home" / ".kimi-code"
    assert (home / "credentials" / "kimi-code-env-43bdb7cf2153aa5d.json").is_file()
    provider = tomllib.loads((home / "config.toml").read_text())["providers"]["managed:kimi-code"]
    assert provider["base_url"] == "http://127.0.0.1:18765/coding/v1"
    assert inv.env["KIMI_LOOP_MAX_ATTEMPTS_PER_STEP"] == "1"


@pytest.mark.parametrize(("table", "says"), [
    ('api_key = "sk-moonshot"\nlogin = true\n', "[kimi]: set api_key or login, not both"),
    ("login = 3\n", "[kimi] login: must be true (your own `kimi login`) or the path of a Kimi Code login file"),
    ('login = "/nowhere/kimi-code.json"\n', "[kimi] login: no Kimi Code login at /nowhere/kimi-code.json (run `kimi login`)"),
    ('api-key = "sk-moonshot"\n', "[kimi] api-key: not a field of [kimi] (api_key or login)"),
    ("api_key = 7\n", "[kimi] api_key: must be a string (a Moonshot API key)"),
])
def test_a_bad_kimi_table_is_one_line_naming_the_file_and_field(tmp_path: Path, user: Path, table: str,
                                                                  says: str) -> None:
    path = tmp_path / "assay-home" / "credentials.toml"
    path.write_text("[kimi]\n" + table)
    with pytest.raises(credentials.CredentialsError) as raised:
        KimiHarness().login_present(tmp_path / "assay-home")
    assert str(raised.value) == f"{path}: {says}"


def test_a_login_file_that_holds_no_tokens_or_no_known_endpoint_is_refused(tmp_path: Path, user: Path) -> None:
    path = tmp_path / "assay-home" / "credentials.toml"
    stray = tmp_path / "stray" / "mine.json"
    stray.parent.mkdir()
    for text, says in (('{"access_token": "a"}', "is not a Kimi Code login (no access_token and refresh_token)"),
                       (user.read_text(), "is for a Kimi Code endpoint no config.toml beside it names")):
        stray.write_text(text)
        credentials.put(path, credentials.KIMI_LOGIN, str(stray))
        with pytest.raises(credentials.CredentialsError, match="^" + str(path)) as raised:
            KimiHarness().login_present(tmp_path / "assay-home")
        assert str(raised.value).endswith(f"[kimi] login: {stray} {says}")


def test_the_user_s_own_login_follows_kimi_code_home(tmp_path: Path, user: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "kimi-elsewhere"
    kimi_login(elsewhere)
    monkeypatch.setenv("KIMI_CODE_HOME", str(elsewhere))
    inv = KimiHarness().invocation(login_request(tmp_path))
    copy = tmp_path / "trial-home" / ".kimi-code" / "credentials" / "kimi-code.json"
    assert json.loads(copy.read_text()) == json.loads((elsewhere / "credentials" / "kimi-code.json").read_text())
    assert inv.env["HOME"] == str(tmp_path / "trial-home") and "KIMI_CODE_HOME" not in inv.env

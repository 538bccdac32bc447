"""An OAuth token endpoint for the scripted provider: refreshes of a ChatGPT-style or Kimi Code login.

``POST /oauth/token`` (or ``/api/oauth/token``, Kimi Code's) with ``grant_type=refresh_token``
(JSON or form) answers new tokens as an OAuth 2.0 token response (RFC 6749 section 5.1, plus
OpenID's ``id_token``), each new: an id token and an access token shaped as JWTs (unsigned: a
random signature) naming the scripted account, and an opaque refresh token. :func:`chatgpt_login`
makes an ``auth.json`` for that account, so a test can give Codex a login whose refreshes this
endpoint serves; :func:`kimi_login` a Kimi Code token file, as ``kimi login`` writes one. The log
keeps no token: only a fingerprint of each one (:func:`fingerprint`).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import secrets
from typing import Any
from urllib.parse import parse_qs

from assay.scripted_provider.wire import Answer

PATH = "/oauth/token"
PATHS = (PATH, "/api/oauth/token")  # Codex's (any host), Kimi Code's
ACCOUNT = "acct-assay-scripted"
EMAIL = "scripted@assay.invalid"
TOKEN_FIELDS = ("id_token", "access_token", "refresh_token")
REVOKED = "rt_revoked_"  # a refresh token the endpoint refuses, as a server refuses a revoked one


def fingerprint(secret: str) -> str:
    """What the log keeps of a credential: enough to tell which one was sent, nothing to reuse."""
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:16]


def jwt(claims: dict[str, Any]) -> str:
    """A JWT-shaped token with ``claims`` and a random signature (nothing checks it here)."""
    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = part(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    return f"{header}.{part(json.dumps(claims).encode())}.{part(secrets.token_bytes(256))}"


def tokens(expires_in: float = 10 * 86400) -> dict[str, str]:
    """A fresh id token, access token and refresh token for the scripted account."""
    now = dt.datetime.now(dt.timezone.utc).timestamp()
    auth = {"chatgpt_plan_type": "plus", "chatgpt_account_id": ACCOUNT, "chatgpt_user_id": "user-assay-scripted"}
    common = {"iat": int(now), "exp": int(now + expires_in), "https://api.openai.com/auth": auth}
    return {
        "id_token": jwt({**common, "email": EMAIL, "aud": ["app_assay"], "sub": "user-assay-scripted"}),
        "access_token": jwt({**common, "scp": ["openid", "profile", "email", "offline_access"]}),
        "refresh_token": "rt_" + secrets.token_urlsafe(40),
    }


def chatgpt_login(refreshed_days_ago: float = 0) -> dict[str, Any]:
    """An ``auth.json`` of a ChatGPT login to the scripted account, as Codex writes one."""
    stamp = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=refreshed_days_ago)
    return {"auth_mode": "chatgpt", "OPENAI_API_KEY": None, "tokens": {**tokens(), "account_id": ACCOUNT},
            "last_refresh": stamp.isoformat().replace("+00:00", "Z")}


def kimi_login(expires_in: float = 900, *, revoked: bool = False) -> dict[str, Any]:
    """A Kimi Code token file for the scripted account, as ``kimi login`` writes one (its access token
    expired when ``expires_in`` is negative: Kimi Code then refreshes it before it asks; with
    ``revoked``, a refresh token this endpoint refuses)."""
    issued = tokens()
    now = int(dt.datetime.now(dt.timezone.utc).timestamp())
    refresh_token = REVOKED + issued["refresh_token"].removeprefix("rt_") if revoked else issued["refresh_token"]
    return {"access_token": issued["access_token"], "refresh_token": refresh_token,
            "expires_at": now + int(expires_in), "scope": "kimi-code", "token_type": "Bearer", "expires_in": 900}


def refresh(raw: bytes) -> tuple[Answer, dict[str, Any]]:
    """The answer to a token request, and what the log keeps of it (fingerprints, never tokens)."""
    request = _fields(raw)
    given = request.get("refresh_token")
    logged = {k: (fingerprint(v) if k == "refresh_token" and isinstance(v, str) else v) for k, v in request.items()}
    if request.get("grant_type") != "refresh_token" or not isinstance(given, str) or not given:
        return Answer(400, json={"error": "invalid_request"}), {"body": logged, "step": "token"}
    if given.startswith(REVOKED):
        refused = {"error": "invalid_grant", "error_description": "The refresh token has been revoked."}
        return Answer(401, json=refused), {"body": logged, "step": "token_refused"}
    issued = tokens()
    answer = {**issued, "token_type": "Bearer", "expires_in": 10 * 86400}
    return Answer(200, json=answer), {"body": logged, "step": "token",
                                      "issued": {k: fingerprint(issued[k]) for k in TOKEN_FIELDS}}


def _fields(raw: bytes) -> dict[str, Any]:
    text = raw.decode(errors="replace")
    try:
        body = json.loads(text)
    except ValueError:
        return {k: v[0] for k, v in parse_qs(text).items()}
    return body if isinstance(body, dict) else {}

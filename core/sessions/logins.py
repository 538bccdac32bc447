"""What a session holds of its login: the real credentials, or per-Trial stand-ins for a broker.

Under a backend with a credential broker (:class:`assay.hooks.protocols.CredentialBroker`) a
Trial gets a stand-in for each credential: unique to it, of the same shape and length as the real
one (a JWT keeps its header and claims, with a signature of random bytes; any other token keeps
its prefix, ``sk-ant-oat01-``…, and its kinds of characters), so the CLI takes it, and worthless
outside: only that Trial's broker knows what it stands for. Same length matters: the broker swaps
values in place without reframing a body.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Mapping

import attrs
from assay.hooks.protocols import Brokered, Login

_CLASSES = (string.ascii_lowercase, string.ascii_uppercase, string.digits)
_PREFIX_WITHIN = 16  # a token's prefix ends at its last '-' or '_' in these first characters


def stand_in(real: str) -> str:
    """A fresh stand-in for ``real``, as long as it and of its shape."""
    parts = real.split(".")
    if len(parts) == 3 and all(parts) and all(_base64url(p) for p in parts):  # a JWT: new signature
        return ".".join((parts[0], parts[1], _random_like(parts[2])))
    cut = max(real.rfind("-", 0, _PREFIX_WITHIN), real.rfind("_", 0, _PREFIX_WITHIN)) + 1
    while True:
        made = real[:cut] + _random_like(real[cut:])
        if made != real or not any(c.isascii() and c.isalnum() for c in real[cut:]):
            return made


def _base64url(text: str) -> bool:
    return all(c.isascii() and (c.isalnum() or c in "-_=") for c in text)


def _random_like(text: str) -> str:
    """Each letter or digit replaced by a random one of its kind; anything else kept."""
    out = []
    for c in text:
        kind = next((k for k in _CLASSES if c in k), None)
        out.append(secrets.choice(kind) if kind else c)
    return "".join(out)


@attrs.define
class FixedLogin:
    """A login held in memory (a scripted provider's credential): refreshes update it there."""

    values: dict[str, str]

    def current(self) -> Mapping[str, str]:
        return dict(self.values)

    def refreshed(self, values: Mapping[str, str]) -> None:
        self.values.update(values)


@attrs.frozen
class Placed:
    """A login's credentials as one session holds them: ``values`` by slot (stand-ins when brokered)."""

    values: Mapping[str, str]
    login: Login | None = None
    stand_ins: Mapping[str, str] = attrs.field(factory=dict)  # stand-in → slot

    def broker(self, hosts: tuple[str, ...], **more: object) -> Brokered | None:
        """The :class:`Brokered` for an Invocation (``more``: its CA variables, token URLs and fields),
        or None when the session holds the real values (no broker runs it)."""
        if self.login is None or not self.stand_ins:
            return None
        return Brokered(self.login, self.stand_ins, hosts, **more)  # type: ignore[arg-type]


def place(login: Login | None, brokered: bool) -> Placed:
    """What a session gets of ``login``: fresh stand-ins when a broker runs it, else the real values."""
    current = {slot: value for slot, value in (login.current() if login else {}).items() if value}
    if not brokered:
        return Placed(current)
    values = {slot: stand_in(value) for slot, value in current.items()}
    return Placed(values, login, {value: slot for slot, value in values.items()})

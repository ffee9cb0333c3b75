"""Who may read what `taudash serve` shows: the one token check the wallboard and the agent's status share.

Loopback needs no token; any other address needs one (`--web-token` / TAUDASH_WEB_TOKEN, at least 16
characters). A request presents it as `Authorization: Bearer TOKEN` (or, for the wallboard's pages, the
cookie set on its first load: a MAC of the token). Compared with `hmac.compare_digest`; never logged.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping

MIN_TOKEN = 16
TOKEN_ENV = "TAUDASH_WEB_TOKEN"
COOKIE = "taudash_wallboard"


def same(given: str | None, expected: str) -> bool:
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode())


def cookie_value(token: str) -> str:
    """What the browser keeps: a MAC of the token, so a leaked cookie does not reveal the token itself."""
    return hmac.new(token.encode(), b"taudash wallboard cookie v1", hashlib.sha256).hexdigest()


def authorized(token: str | None, authorization: str, cookie: str | None = None) -> bool:
    """True when no token is set, or the request presents it (bearer header, or the wallboard's cookie)."""
    if token is None:
        return True
    if authorization[:7].lower() == "bearer " and same(authorization[7:].strip(), token):
        return True
    return same(cookie, cookie_value(token))


def token_from(flag: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    return flag if flag else (env.get(TOKEN_ENV) or None)

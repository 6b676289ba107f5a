"""Bearer API key for `/v1/*` and the operator API; the Bearer check `/metrics` shares."""

from __future__ import annotations

import hmac

from aiohttp import web
from pydantic import SecretStr

from gateway.http.errors import Unauthorized
from gateway.keys import SETTINGS


def require_api_key(request: web.Request) -> None:
    """Raise 401 unless the request carries `Authorization: Bearer <RELAYDESK_API_KEY>`.

    With no key configured every call is refused: an open API by accident is worse than a
    gateway that needs one more setting.
    """
    if not bearer_matches(request, request.app[SETTINGS].api_key):
        raise Unauthorized("a valid Bearer API key is required")


def bearer_matches(request: web.Request, configured: SecretStr | None) -> bool:
    """Whether the request carries `Authorization: Bearer <configured>` (compared in constant
    time); never when nothing is configured."""
    header = request.headers.get("Authorization", "")
    scheme, _, presented = header.partition(" ")
    # A key is ASCII; anything else (a header that was not UTF-8) cannot match.
    if configured is None or scheme.lower() != "bearer" or not presented.isascii():
        return False
    expected = configured.get_secret_value().encode()
    return bool(presented.strip()) and hmac.compare_digest(presented.strip().encode(), expected)

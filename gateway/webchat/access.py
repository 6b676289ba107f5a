"""Who may use a web chat thread.

- Every entry point (`POST /webchat/visitors` aside) needs a visitor id this server signed
  (`gateway.webchat.visitors`); anything else is refused with 403 `invalid_visitor_id` and
  nothing is stored or read.
- Reading a thread (`GET /webchat/messages`, the websocket's backlog and live frames): an
  anonymous thread needs only its signed visitor id, the visitor's secret. A thread that a
  verified account wrote in needs, besides, a valid identity token of that account (401
  `identity_required` without one, 403 `identity_mismatch` with another account's): a
  visitor id left behind on a shared computer does not open a signed-in customer's history.
"""

from __future__ import annotations

from aiohttp import web

from gateway.http.errors import Forbidden, Unauthorized
from gateway.keys import SESSIONS, SETTINGS
from gateway.storage.repositories import messages
from gateway.webchat.visitors import VISITORS
from identity import (
    ChannelIdentityKey,
    Identifier,
    InvalidIdentifier,
    normalize_opaque_id,
    verify_identity_token,
)


def thread_key(visitor_id: str) -> str:
    return f"webchat:{visitor_id}"


def require_signed(app: web.Application, visitor_id: str) -> None:
    if not app[VISITORS].is_valid(visitor_id):
        raise Forbidden(
            "visitor_id was not issued by this server; get one from POST /webchat/visitors",
            code="invalid_visitor_id",
        )


def account_of(app: web.Application, token: str | None) -> str | None:
    """The external id (`web:acct:<sub>`) of the account a valid identity token names."""
    secret = app[SETTINGS].webchat_secret
    if token is None or secret is None:
        return None
    claims = verify_identity_token(token, secret.get_secret_value())
    if claims is None:
        return None
    try:
        account = Identifier("web_account", normalize_opaque_id(claims.sub))
    except InvalidIdentifier:
        return None
    return str(ChannelIdentityKey("webchat", account))


def _is_account(external_id: str) -> bool:
    try:
        return ChannelIdentityKey.parse(external_id).identifier.kind == "web_account"
    except InvalidIdentifier:
        return False


async def require_reader(app: web.Application, visitor_id: str, token: str | None) -> None:
    """Refuse a read of the visitor's thread unless the rules above allow it."""
    require_signed(app, visitor_id)
    async with app[SESSIONS]() as session:
        writers = await messages.thread_identities(session, thread_key(visitor_id))
    accounts = {writer for writer in writers if _is_account(writer)}
    if not accounts:
        return
    reader = account_of(app, token)
    if reader is None:
        raise Unauthorized(
            "this thread was written by a signed-in account: send its identity token",
            code="identity_required",
        )
    if accounts != {reader}:
        raise Forbidden(
            "the identity token is not the account of this thread", code="identity_mismatch"
        )

"""`Idempotency-Key` on `POST /v1/*`, with Stripe's semantics.

A request that carries the header claims the key for its route (method and path) in its own
committed transaction before the handler runs. A retry of the same request (same fingerprint:
method, path, query string and body) then gets the stored response back with
`Idempotent-Replayed: true`; the same key with another request is 422 `idempotency_key_reused`;
a retry while the first is still running is 409 `idempotency_key_in_progress`.

The caller is authenticated (API key, or console login on the operator API) before the key is
looked up, so a stored response is never replayed to someone without credentials. Only a
response the handler returned with a status below 500 is stored. An exception, a 5xx, a
401/403 (the handler checks the credentials, so an unauthenticated request must leave no key
behind) or a response that is not a plain `web.Response` with a text body releases the key, so
the retry runs again. Keys live 24 hours; a claim whose lock ran out (its process died) or an
expired key is taken over by the next request.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from aiohttp import hdrs, web
from aiohttp.typedefs import Handler
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import unstorable
from gateway.http.auth import require_api_key
from gateway.http.errors import BadRequest, Conflict, NotFound, Unprocessable
from gateway.keys import SESSIONS
from gateway.operators.actor import operator_actor
from gateway.runtime.clock import utcnow
from gateway.storage.errors import DuplicateKey
from gateway.storage.repositories import idempotency as keys
from gateway.storage.repositories.idempotency import IN_PROGRESS

log = logging.getLogger("relaydesk.idempotency")

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
KEY_TTL = timedelta(hours=24)
# How long a claim holds the key while its handler runs; past it the holder is presumed dead.
LOCK_TTL = timedelta(minutes=5)
# Attempts at claiming when the row keeps changing under us (released or taken over).
CLAIM_ATTEMPTS = 3

_KEY = re.compile(r"[\x20-\x7e]{1,255}")


@dataclass(frozen=True, slots=True)
class Scope:
    """A key as the client sent it, on one route."""

    key: str
    method: str
    path: str


@dataclass(frozen=True, slots=True)
class Claim:
    """This request holds the key; `locked_until` tells our claim apart from a later one."""

    row_id: int
    locked_until: datetime


@dataclass(frozen=True, slots=True)
class StoredResponse:
    status: int
    body: str
    content_type: str | None


def is_valid_key(value: str) -> bool:
    """1–255 printable ASCII characters."""
    return _KEY.fullmatch(value) is not None


def fingerprint(method: str, path: str, query: str, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (method, path, query):
        digest.update(part.encode())
        digest.update(b"\0")
    digest.update(body)
    return digest.hexdigest()


async def claim(
    sessions: async_sessionmaker[AsyncSession], scope: Scope, digest: str, now: datetime
) -> Claim | StoredResponse:
    """Claim the key for this request, or return the response stored for it.

    Raises `Unprocessable` when the key was used for another request and `Conflict` while the
    request holding it still runs.
    """
    locked_until = now + LOCK_TTL
    for _ in range(CLAIM_ATTEMPTS):
        try:
            async with sessions.begin() as session:
                row_id = await keys.add_claim(
                    session,
                    key=scope.key,
                    method=scope.method,
                    path=scope.path,
                    fingerprint=digest,
                    created_at=now,
                    locked_until=locked_until,
                )
                return Claim(row_id, locked_until)
        except DuplicateKey:
            pass
        async with sessions() as session:
            existing = await keys.find_key(
                session, key=scope.key, method=scope.method, path=scope.path
            )
        if existing is None:
            continue  # released between our insert and our read
        expired = existing.created_at <= now - KEY_TTL
        if not expired and existing.fingerprint != digest:
            raise Unprocessable(
                f"{HEADER} {scope.key!r} was already used with a different request",
                code="idempotency_key_reused",
            )
        abandoned = existing.status == IN_PROGRESS and existing.locked_until <= now
        if expired or abandoned:
            if await _take_over(sessions, existing.id, digest, now, locked_until):
                return Claim(existing.id, locked_until)
            continue
        if existing.status == IN_PROGRESS:
            break
        return StoredResponse(
            status=existing.response_status or 200,
            body=existing.response_body or "",
            content_type=existing.content_type,
        )
    raise Conflict(
        f"a request with {HEADER} {scope.key!r} is still in progress; retry later",
        code="idempotency_key_in_progress",
    )


async def _take_over(
    sessions: async_sessionmaker[AsyncSession],
    row_id: int,
    digest: str,
    now: datetime,
    locked_until: datetime,
) -> bool:
    async with sessions.begin() as session:
        return await keys.take_over(
            session,
            row_id,
            fingerprint=digest,
            now=now,
            expired_at=now - KEY_TTL,
            locked_until=locked_until,
        )


async def store(
    sessions: async_sessionmaker[AsyncSession], held: Claim, response: StoredResponse
) -> None:
    async with sessions.begin() as session:
        await keys.store_response(
            session,
            held.row_id,
            held.locked_until,
            status=response.status,
            body=response.body,
            content_type=response.content_type,
        )


async def release(sessions: async_sessionmaker[AsyncSession], held: Claim) -> None:
    async with sessions.begin() as session:
        await keys.release_claim(session, held.row_id, held.locked_until)


def storable(response: web.StreamResponse) -> StoredResponse | None:
    """What to keep of a handler's response, or None when it must not be replayed."""
    if not isinstance(response, web.Response):
        return None
    if response.status >= 500 or response.status in (401, 403):
        return None
    body = response.body
    if body is None:
        text = ""
    elif isinstance(body, bytes):
        try:
            text = body.decode()
        except UnicodeDecodeError:
            return None
    else:
        return None  # a streamed payload
    return StoredResponse(response.status, text, response.headers.get(hdrs.CONTENT_TYPE))


def replay(stored: StoredResponse) -> web.Response:
    headers = {REPLAYED_HEADER: "true"}
    if stored.content_type is not None:
        headers[hdrs.CONTENT_TYPE] = stored.content_type
    return web.Response(status=stored.status, body=stored.body.encode(), headers=headers)


async def authenticate(request: web.Request) -> None:
    """The check the route's handler makes first (it makes it again; both are cheap)."""
    if request.path.startswith("/v1/operator/"):
        await operator_actor(request)
    else:
        require_api_key(request)


@web.middleware
async def idempotency_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    key = request.headers.get(HEADER)
    if (
        key is None
        or request.method != hdrs.METH_POST
        or not request.path.startswith("/v1/")
        or request.match_info.http_exception is not None  # 404/405 stay as they are
    ):
        return await handler(request)
    if not is_valid_key(key):
        raise BadRequest(
            f"{HEADER} must be 1-255 printable ASCII characters", code="invalid_idempotency_key"
        )
    # Keys are per route, not per caller: only an authenticated request may look one up, or a
    # stranger who guesses a key would be handed the stored response.
    await authenticate(request)
    if unstorable(request.path):
        # A path that carries NUL names no record (and could not be stored as the key's route).
        raise NotFound("no such resource")
    # Read before claiming: an oversized body is refused (413) without leaving a key behind.
    # aiohttp keeps the bytes, so the handler reads the same body again.
    body = await request.read()
    sessions = request.app[SESSIONS]
    scope = Scope(key, request.method, request.path)
    digest = fingerprint(request.method, request.path, request.rel_url.raw_query_string, body)
    outcome = await claim(sessions, scope, digest, utcnow())
    if isinstance(outcome, StoredResponse):
        return replay(outcome)
    try:
        response = await handler(request)
    except BaseException:
        await asyncio.shield(release(sessions, outcome))
        raise
    kept = storable(response)
    if kept is None:
        await release(sessions, outcome)
        return response
    try:
        await store(sessions, outcome, kept)
    except Exception:
        # The work is done and its response is the truth; only the replay is lost. The claim
        # stays in progress until its lock runs out, then a retry runs again.
        log.warning("idempotent response not stored", extra={"fields": {"path": request.path}})
    return response

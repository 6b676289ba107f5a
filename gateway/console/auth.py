"""Operator accounts, console logins and CSRF.

Passwords: salted `hashlib.scrypt` (n=2**14, r=8, p=1), stored as
`scrypt$n$r$p$salt_hex$hash_hex`, compared with `hmac.compare_digest`.

A login is a random 256-bit token in the `relaydesk_console` cookie (HttpOnly, SameSite=Strict,
Secure when the gateway is reached over https); the `operator_sessions` table keeps only the
token's SHA-256, the operator, the expiry and the login's CSRF token. Every state-changing
console form carries that CSRF token in a hidden field; JSON calls made with the cookie send it
in `X-CSRF-Token`. The login form itself is protected by a double-submit cookie, and repeated
failures are throttled per account and per client address (`gateway.console.throttle`).

The cookie's path is `/`, not `/console`: the operator JSON API under `/v1/operator` accepts the
same login (with the CSRF header), so a browser must send the cookie there too.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import math
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.console import throttle
from gateway.http.auth import require_api_key
from gateway.http.errors import Conflict, Forbidden, TooManyRequests, Unauthorized
from gateway.keys import SESSIONS, SETTINGS
from gateway.runtime.clock import utcnow
from gateway.storage.repositories import operators

COOKIE = "relaydesk_console"
LOGIN_CSRF_COOKIE = "relaydesk_login_csrf"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
SESSION_TTL = timedelta(hours=8)
_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1
_MIN_PASSWORD = 10
# Verifying against this keeps an unknown username as slow as a wrong password.
_DUMMY_HASH = (
    "scrypt$16384$8$1$00000000000000000000000000000000$"
    "0000000000000000000000000000000000000000000000000000000000000000"
)


class OperatorAccountError(ValueError):
    """A username or password that cannot make an account."""


@dataclass(frozen=True, slots=True)
class OperatorLogin:
    """The operator behind a console request."""

    operator_id: str
    username: str
    csrf_token: str
    expires_at: datetime


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hashlib.scrypt(
        password.encode(), salt=salt, n=_SCRYPT_N, r=_SCRYPT_R, p=_SCRYPT_P, dklen=32
    )
    return f"scrypt${_SCRYPT_N}${_SCRYPT_R}${_SCRYPT_P}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt_hex, hash_hex = stored.split("$")
        if scheme != "scrypt":
            return False
        digest = hashlib.scrypt(
            password.encode(),
            salt=bytes.fromhex(salt_hex),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(hash_hex) // 2,
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(digest.hex(), hash_hex)


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def create_operator(session: AsyncSession, username: str, password: str) -> str:
    """Add an account; returns its id. Raises `OperatorAccountError` or `Conflict`."""
    username = username.strip()
    if not username or len(username) > 200 or any(c.isspace() for c in username):
        raise OperatorAccountError("a username is 1-200 characters without spaces")
    if len(password) < _MIN_PASSWORD:
        raise OperatorAccountError(f"a password has at least {_MIN_PASSWORD} characters")
    hashed = await asyncio.to_thread(hash_password, password)
    try:
        return await operators.add_operator(session, username, hashed)
    except operators.OperatorExists as exc:
        raise Conflict(str(exc)) from exc


async def log_in(session: AsyncSession, username: str, password: str) -> tuple[str, OperatorLogin]:
    """Check the password and open a login; returns (cookie token, login)."""
    account = await operators.operator_by_username(session, username.strip())
    stored = account.password_hash if account is not None else _DUMMY_HASH
    matches = await asyncio.to_thread(verify_password, password, stored)
    if account is None or account.disabled or not matches:
        raise Unauthorized("unknown operator or wrong password")
    token = secrets.token_urlsafe(32)
    csrf_token = secrets.token_urlsafe(32)
    now = utcnow()
    expires_at = now + SESSION_TTL
    await operators.open_login(
        session,
        token_sha256=_token_hash(token),
        operator_id=account.id,
        csrf_token=csrf_token,
        created_at=now,
        expires_at=expires_at,
    )
    # Expired logins of anyone are dropped whenever someone logs in.
    await operators.drop_expired_logins(session, now)
    return token, OperatorLogin(account.id, account.username, csrf_token, expires_at)


async def attempt_login(
    sessions: async_sessionmaker[AsyncSession], username: str, password: str, client: str
) -> tuple[str, OperatorLogin]:
    """`log_in` behind the throttle: raises `TooManyRequests` (nothing checked) while the
    account or the address must wait, `Unauthorized` (the failure counted and audited) on a
    wrong password; a success clears the account's failures."""
    account = username.strip()
    async with sessions() as session:
        wait = await throttle.retry_after(session, account, client, utcnow())
    if wait is not None:
        seconds = max(1, math.ceil(wait.total_seconds()))
        raise TooManyRequests(
            f"too many failed logins; try again in {seconds} s",
            retry_after_s=seconds,
            code="login_throttled",
        )
    try:
        async with sessions.begin() as session:
            opened = await log_in(session, account, password)
            await throttle.record_success(session, account, utcnow())
            return opened
    except Unauthorized:
        async with sessions.begin() as session:
            await throttle.record_failure(session, account, client, utcnow())
        raise


async def find_login(session: AsyncSession, token: str) -> OperatorLogin | None:
    stored = await operators.find_login(session, _token_hash(token))
    if stored is None or stored.expires_at <= utcnow() or stored.disabled:
        return None
    return OperatorLogin(stored.operator_id, stored.username, stored.csrf_token, stored.expires_at)


async def log_out(session: AsyncSession, token: str) -> None:
    await operators.close_login(session, _token_hash(token))


async def current_login(request: web.Request) -> OperatorLogin | None:
    token = request.cookies.get(COOKIE)
    if not token:
        return None
    async with request.app[SESSIONS]() as session:
        return await find_login(session, token)


def csrf_matches(login: OperatorLogin, presented: str | None) -> bool:
    return bool(presented) and hmac.compare_digest(
        login.csrf_token.encode(), str(presented).encode()
    )


def is_secure(request: web.Request) -> bool:
    public = request.app[SETTINGS].public_url or ""
    return request.secure or public.startswith("https://")


def set_cookie(response: web.StreamResponse, request: web.Request, name: str, value: str) -> None:
    response.set_cookie(
        name,
        value,
        path="/",
        httponly=True,
        samesite="Strict",
        secure=is_secure(request),
        max_age=int(SESSION_TTL.total_seconds()),
    )


async def operator_actor(request: web.Request) -> str | None:
    """Authenticate a call of the operator JSON API: with the Bearer API key (returns None: the
    body's `actor` names who acts) or with a console login (returns its username; a POST must
    carry `X-CSRF-Token`). Raises `Unauthorized` / `Forbidden`."""
    if request.headers.get("Authorization"):
        require_api_key(request)
        return None
    login = await current_login(request)
    if login is None:
        raise Unauthorized("a valid Bearer API key or a console login is required")
    if request.method not in ("GET", "HEAD", "OPTIONS") and not csrf_matches(
        login, request.headers.get(CSRF_HEADER)
    ):
        raise Forbidden("the X-CSRF-Token header is missing or wrong", code="csrf_failed")
    return login.username

"""Operator logins.

A login is a random 256-bit token in the `relaydesk_console` cookie; the `operator_sessions`
table keeps only the token's SHA-256, the operator, the expiry and the login's CSRF token.
Repeated failures are throttled per client address and per account from that address
(`throttle`); every attempt is counted before its password is checked (`attempts`).

The cookie's path is `/`, not `/console`: the operator JSON API under `/v1/operator` accepts the
same login (with the CSRF header, `actor.operator_actor`), so a browser sends it there too.
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

from gateway.http.errors import TooManyRequests, Unauthorized
from gateway.keys import REDIS, SESSIONS, SETTINGS
from gateway.operators import throttle
from gateway.operators.attempts import AttemptLedger, DatabaseLedger, Refused
from gateway.operators.attempts_redis import RedisLedger
from gateway.operators.passwords import DUMMY_HASH, verify_password
from gateway.runtime.clock import utcnow
from gateway.storage.repositories import audit, login_failures, operators
from gateway.storage.repositories.operators import OperatorRole

COOKIE = "relaydesk_console"
SESSION_TTL = timedelta(hours=8)


@dataclass(frozen=True, slots=True)
class OperatorLogin:
    """The operator behind a request made with a login cookie."""

    operator_id: str
    username: str
    csrf_token: str
    expires_at: datetime
    role: OperatorRole

    @property
    def is_admin(self) -> bool:
        return self.role is OperatorRole.ADMIN


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def log_in(session: AsyncSession, username: str, password: str) -> tuple[str, OperatorLogin]:
    """Check the password and open a login; returns (cookie token, login)."""
    account = await operators.operator_by_username(session, username.strip())
    stored = account.password_hash if account is not None else DUMMY_HASH
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
    return token, OperatorLogin(account.id, account.username, csrf_token, expires_at, account.role)


def ledger_of(app: web.Application) -> AttemptLedger:
    """Where the app counts login attempts: Redis when configured (the database while Redis
    fails), else the database."""
    database = DatabaseLedger(app[SESSIONS])
    redis = app.get(REDIS)
    if redis is None:
        return database
    return RedisLedger(redis, fallback=database, prefix=app[SETTINGS].login_attempts_prefix)


async def attempt_login(
    sessions: async_sessionmaker[AsyncSession],
    ledger: AttemptLedger,
    username: str,
    password: str,
    client: str,
) -> tuple[str, OperatorLogin]:
    """`log_in` behind the throttle: the attempt is counted first, then checked. Raises
    `TooManyRequests` (nothing checked, nothing counted) while this address, or this account
    from it, must wait; `Unauthorized` (the failure stays counted, and is audited) on a wrong
    password; a success takes back the account's attempts from this address."""
    account = username.strip()
    reserved = await ledger.reserve(account, throttle.client_key(client), utcnow())
    if isinstance(reserved, Refused):
        seconds = max(1, math.ceil(reserved.wait.total_seconds()))
        raise TooManyRequests(
            f"too many failed logins; try again in {seconds} s",
            retry_after_s=seconds,
            code="login_throttled",
        )
    try:
        async with sessions.begin() as session:
            opened = await log_in(session, account, password)
    except Unauthorized:
        async with sessions.begin() as session:
            await _audit_failure(session, account, client)
        raise
    await reserved.forgive()
    return opened


async def _audit_failure(session: AsyncSession, account: str, client: str) -> None:
    """Audit a failed login: the account name tried and the address, never the password."""
    await audit.record_audit(
        session,
        actor=account[: login_failures.ACCOUNT_CHARS] or "(empty)",
        action="console_login_failed",
        reason="unknown operator or wrong password",
        subject_type="operator",
        subject_id=account[:64] or "(empty)",
        details={"client": client},
    )


async def find_login(session: AsyncSession, token: str) -> OperatorLogin | None:
    stored = await operators.find_login(session, _token_hash(token))
    # Read on every request: a disabled account's open logins stop at its next one.
    if stored is None or stored.expires_at <= utcnow() or stored.disabled:
        return None
    return OperatorLogin(
        stored.operator_id, stored.username, stored.csrf_token, stored.expires_at, stored.role
    )


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

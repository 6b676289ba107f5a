"""Operator accounts: `relaydesk operator add` and the tests create them here."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.http.errors import Conflict
from gateway.operators.passwords import hash_password
from gateway.storage.repositories import operators
from gateway.storage.repositories.operators import OperatorRole

MIN_PASSWORD = 10


class OperatorAccountError(ValueError):
    """A username or password that cannot make an account."""


async def create_operator(
    session: AsyncSession,
    username: str,
    password: str,
    *,
    role: OperatorRole = OperatorRole.AGENT,
) -> str:
    """Add an account (an agent unless `role` says otherwise); returns its id. Raises
    `OperatorAccountError` or `Conflict`."""
    username = username.strip()
    if not username or len(username) > 200 or any(c.isspace() for c in username):
        raise OperatorAccountError("a username is 1-200 characters without spaces")
    hashed = await hash_new_password(password)
    try:
        return await operators.add_operator(session, username, hashed, role)
    except operators.OperatorExists as exc:
        raise Conflict(str(exc)) from exc


async def hash_new_password(password: str) -> str:
    """The scrypt hash of a new password. Raises `OperatorAccountError` when too short."""
    if len(password) < MIN_PASSWORD:
        raise OperatorAccountError(f"a password has at least {MIN_PASSWORD} characters")
    # scrypt takes tens of milliseconds of CPU: off the event loop.
    return await asyncio.to_thread(hash_password, password)

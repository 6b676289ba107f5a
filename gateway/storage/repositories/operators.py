"""Operator accounts and their console logins (`operators`, `operator_sessions`).

Hashing passwords and tokens is the caller's job: this layer stores and finds the hashes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import StorageError
from gateway.storage.models import Operator, OperatorSession


class OperatorExists(StorageError):
    """An account with that username is already stored."""


@dataclass(frozen=True, slots=True)
class OperatorAccount:
    id: str
    username: str
    password_hash: str
    disabled: bool


@dataclass(frozen=True, slots=True)
class StoredLogin:
    """A console login joined with the account it belongs to."""

    operator_id: str
    username: str
    disabled: bool
    csrf_token: str
    expires_at: datetime


async def add_operator(session: AsyncSession, username: str, password_hash: str) -> str:
    """Store an account; returns its id. Raises `OperatorExists` (the caller's transaction
    stays usable: the insert runs in a savepoint)."""
    row = Operator(username=username, password_hash=password_hash)
    try:
        async with session.begin_nested():
            session.add(row)
            await session.flush()
    except IntegrityError as exc:
        raise OperatorExists(f"operator {username!r} already exists") from exc
    return row.id


async def operator_by_username(session: AsyncSession, username: str) -> OperatorAccount | None:
    row = await session.scalar(select(Operator).where(Operator.username == username))
    if row is None:
        return None
    return OperatorAccount(row.id, row.username, row.password_hash, row.disabled)


async def open_login(
    session: AsyncSession,
    *,
    token_sha256: str,
    operator_id: str,
    csrf_token: str,
    created_at: datetime,
    expires_at: datetime,
) -> None:
    session.add(
        OperatorSession(
            token_sha256=token_sha256,
            operator_id=operator_id,
            csrf_token=csrf_token,
            created_at=created_at,
            expires_at=expires_at,
        )
    )
    await session.flush()


async def drop_expired_logins(session: AsyncSession, now: datetime) -> None:
    """Delete every login (of any operator) that expired before `now`."""
    await session.execute(delete(OperatorSession).where(OperatorSession.expires_at < now))


async def find_login(session: AsyncSession, token_sha256: str) -> StoredLogin | None:
    """The login stored under this token hash, expired or not, with its account."""
    found = await session.execute(
        select(OperatorSession, Operator)
        .join(Operator, Operator.id == OperatorSession.operator_id)
        .where(OperatorSession.token_sha256 == token_sha256)
    )
    pair = found.first()
    if pair is None:
        return None
    login, operator = pair
    return StoredLogin(
        operator_id=operator.id,
        username=operator.username,
        disabled=operator.disabled,
        csrf_token=login.csrf_token,
        expires_at=login.expires_at,
    )


async def close_login(session: AsyncSession, token_sha256: str) -> None:
    await session.execute(
        delete(OperatorSession).where(OperatorSession.token_sha256 == token_sha256)
    )

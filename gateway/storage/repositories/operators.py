"""Operator accounts and their console logins (`operators`, `operator_sessions`).

Hashing passwords and tokens is the caller's job: this layer stores and finds the hashes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import StorageError
from gateway.storage.models import Operator, OperatorSession
from gateway.storage.repositories.scrub import rowcount


class OperatorExists(StorageError):
    """An account with that username is already stored."""


class OperatorRole(StrEnum):
    """What an account may do: an agent answers customers; an admin also erases them, changes
    settings and manages accounts."""

    ADMIN = "admin"
    AGENT = "agent"


@dataclass(frozen=True, slots=True)
class OperatorAccount:
    id: str
    username: str
    password_hash: str
    role: OperatorRole
    disabled_at: datetime | None
    created_at: datetime

    @property
    def disabled(self) -> bool:
        return self.disabled_at is not None


@dataclass(frozen=True, slots=True)
class StoredLogin:
    """A console login joined with the account it belongs to."""

    operator_id: str
    username: str
    disabled: bool
    csrf_token: str
    expires_at: datetime
    role: OperatorRole


def _account(row: Operator) -> OperatorAccount:
    return OperatorAccount(
        row.id,
        row.username,
        row.password_hash,
        OperatorRole(row.role),
        row.disabled_at,
        row.created_at,
    )


async def add_operator(
    session: AsyncSession,
    username: str,
    password_hash: str,
    role: OperatorRole = OperatorRole.AGENT,
) -> str:
    """Store an account; returns its id. Raises `OperatorExists` (the caller's transaction
    stays usable: the insert runs in a savepoint)."""
    row = Operator(username=username, password_hash=password_hash, role=role.value)
    try:
        async with session.begin_nested():
            session.add(row)
            await session.flush()
    except IntegrityError as exc:
        raise OperatorExists(f"operator {username!r} already exists") from exc
    return row.id


async def operator_by_username(session: AsyncSession, username: str) -> OperatorAccount | None:
    row = await session.scalar(select(Operator).where(Operator.username == username))
    return None if row is None else _account(row)


async def list_operators(session: AsyncSession) -> tuple[OperatorAccount, ...]:
    """Every account, by username."""
    rows = await session.scalars(select(Operator).order_by(Operator.username))
    return tuple(_account(row) for row in rows)


async def count_operators(session: AsyncSession) -> int:
    return int(await session.scalar(select(func.count()).select_from(Operator)) or 0)


async def lock_active_admins(session: AsyncSession) -> tuple[str, ...]:
    """The ids of the admins who may log in, their rows locked until the transaction ends
    (on PostgreSQL; SQLite has one writer at a time), so that two admins disabling each other
    at once cannot leave none."""
    ids = await session.scalars(
        select(Operator.id)
        .where(Operator.role == OperatorRole.ADMIN.value, Operator.disabled_at.is_(None))
        .order_by(Operator.id)
        .with_for_update()
    )
    return tuple(ids)


async def set_disabled_at(
    session: AsyncSession, operator_id: str, disabled_at: datetime | None
) -> None:
    """Disable an account from `disabled_at`, or enable it again with None."""
    await session.execute(
        update(Operator).where(Operator.id == operator_id).values(disabled_at=disabled_at)
    )


async def set_password_hash(session: AsyncSession, operator_id: str, password_hash: str) -> None:
    await session.execute(
        update(Operator).where(Operator.id == operator_id).values(password_hash=password_hash)
    )


async def close_logins_of(session: AsyncSession, operator_id: str) -> int:
    """End every console login of an account; returns how many."""
    result = await session.execute(
        delete(OperatorSession).where(OperatorSession.operator_id == operator_id)
    )
    return rowcount(result)


async def remove_operator(session: AsyncSession, operator_id: str) -> None:
    """Delete an account and its logins. What it did stays in the audit log under its name."""
    await close_logins_of(session, operator_id)
    await session.execute(delete(Operator).where(Operator.id == operator_id))


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
        disabled=operator.disabled_at is not None,
        csrf_token=login.csrf_token,
        expires_at=login.expires_at,
        role=OperatorRole(operator.role),
    )


async def close_login(session: AsyncSession, token_sha256: str) -> None:
    await session.execute(
        delete(OperatorSession).where(OperatorSession.token_sha256 == token_sha256)
    )

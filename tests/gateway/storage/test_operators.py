"""Operator accounts and console logins as stored: hashes in, records out."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.repositories import operators
from gateway.storage.repositories.operators import OperatorRole


async def test_an_account_is_found_by_username_and_a_second_one_is_refused(
    session: AsyncSession,
) -> None:
    operator_id = await operators.add_operator(session, "ana.ops", "scrypt$hash")
    found = await operators.operator_by_username(session, "ana.ops")
    assert found is not None
    assert (found.id, found.password_hash) == (operator_id, "scrypt$hash")
    assert (found.role, found.disabled_at, found.disabled) == (OperatorRole.AGENT, None, False)
    assert await operators.operator_by_username(session, "ANA.OPS") is None
    with pytest.raises(operators.OperatorExists, match="ana.ops"):
        await operators.add_operator(session, "ana.ops", "scrypt$other")
    # The refused insert ran in a savepoint: the transaction goes on.
    assert (await operators.operator_by_username(session, "ana.ops")) == found
    other = await operators.add_operator(session, "bia.ops", "scrypt$hash")
    assert other != operator_id


async def test_a_login_is_found_by_its_token_hash_until_closed(session: AsyncSession) -> None:
    operator_id = await operators.add_operator(session, "ana.ops", "scrypt$hash")
    now = utcnow()
    await operators.open_login(
        session,
        token_sha256="a" * 64,
        operator_id=operator_id,
        csrf_token="csrf-1",
        created_at=now,
        expires_at=now + timedelta(hours=8),
    )
    found = await operators.find_login(session, "a" * 64)
    assert found == operators.StoredLogin(
        operator_id, "ana.ops", False, "csrf-1", now + timedelta(hours=8), OperatorRole.AGENT
    )
    assert await operators.find_login(session, "b" * 64) is None
    await operators.set_disabled_at(session, operator_id, now)
    disabled = await operators.find_login(session, "a" * 64)
    assert disabled is not None and disabled.disabled
    await operators.close_login(session, "a" * 64)
    assert await operators.find_login(session, "a" * 64) is None


async def test_dropping_expired_logins_keeps_the_live_ones(session: AsyncSession) -> None:
    operator_id = await operators.add_operator(session, "ana.ops", "scrypt$hash")
    now = utcnow()
    for token, expires in (("e" * 64, now - timedelta(seconds=1)), ("l" * 64, now)):
        await operators.open_login(
            session,
            token_sha256=token,
            operator_id=operator_id,
            csrf_token="csrf",
            created_at=now - timedelta(hours=8),
            expires_at=expires,
        )
    expired = await operators.find_login(session, "e" * 64)
    assert expired is not None  # found while stored: expiry is the caller's rule
    await operators.drop_expired_logins(session, now)
    assert await operators.find_login(session, "e" * 64) is None
    assert await operators.find_login(session, "l" * 64) is not None


async def test_accounts_are_listed_disabled_enabled_and_removed_with_their_logins(
    session: AsyncSession,
) -> None:
    admin = await operators.add_operator(session, "zoe.admin", "scrypt$a", OperatorRole.ADMIN)
    agent = await operators.add_operator(session, "ana.agent", "scrypt$b")
    # The database is shared with other tests' committed accounts: look at these two only.
    listed = [a for a in await operators.list_operators(session) if a.id in (admin, agent)]
    assert [(a.username, a.role) for a in listed] == [
        ("ana.agent", OperatorRole.AGENT),
        ("zoe.admin", OperatorRole.ADMIN),
    ]
    before = await operators.count_operators(session)
    assert admin in await operators.lock_active_admins(session)
    now = utcnow()
    await operators.set_disabled_at(session, admin, now)
    assert admin not in await operators.lock_active_admins(session)
    stored = await operators.operator_by_username(session, "zoe.admin")
    assert stored is not None and stored.disabled_at == now
    await operators.set_disabled_at(session, admin, None)
    assert admin in await operators.lock_active_admins(session)
    await operators.set_password_hash(session, agent, "scrypt$new")
    renewed = await operators.operator_by_username(session, "ana.agent")
    assert renewed is not None and renewed.password_hash == "scrypt$new"
    await operators.open_login(
        session,
        token_sha256="c" * 64,
        operator_id=agent,
        csrf_token="csrf",
        created_at=now,
        expires_at=now + timedelta(hours=1),
    )
    await operators.remove_operator(session, agent)
    assert await operators.find_login(session, "c" * 64) is None
    assert await operators.operator_by_username(session, "ana.agent") is None
    assert await operators.count_operators(session) == before - 1

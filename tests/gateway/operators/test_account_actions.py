"""Account actions on SQLite and PostgreSQL, each in a transaction rolled back after the test:
what each stores, the logins it ends, its audit entry, and the refusals."""

from __future__ import annotations

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.http.errors import Conflict, NotFound, Unauthorized
from gateway.operators import account_actions, logins
from gateway.operators.account_actions import COMMAND_LINE, AccountActor
from gateway.operators.accounts import OperatorAccountError
from gateway.runtime.clock import utcnow
from gateway.storage.models import Operator
from gateway.storage.repositories import audit, operators
from gateway.storage.repositories.operators import OperatorRole

PASSWORD = "correct horse battery"


async def _only_admin(session: AsyncSession, username: str) -> str:
    """`username` as the only active admin: others' committed admins disabled, in this
    transaction only (rolled back after the test)."""
    await session.execute(
        update(Operator)
        .where(Operator.role == OperatorRole.ADMIN.value, Operator.disabled_at.is_(None))
        .values(disabled_at=utcnow())
    )
    return await account_actions.add_account(
        session, username, PASSWORD, OperatorRole.ADMIN, actor=COMMAND_LINE
    )


async def _audited(session: AsyncSession, subject_id: str) -> list[tuple[str, str, str]]:
    entries = await audit.list_audit(session, subject_id=subject_id)
    return sorted((e.action, e.actor, e.details["username"]) for e in entries)


async def test_each_action_is_stored_ends_logins_where_it_should_and_is_audited(
    session: AsyncSession,
) -> None:
    admin_id = await _only_admin(session, "zoe.admin")
    admin = AccountActor("zoe.admin", admin_id, "from the console")
    agent_id = await account_actions.add_account(
        session, "ana.agent", PASSWORD, OperatorRole.AGENT, actor=admin
    )
    listed = {a.username: a for a in await account_actions.list_accounts(session)}
    assert (listed["ana.agent"].role, listed["ana.agent"].disabled) == (OperatorRole.AGENT, False)
    assert listed["zoe.admin"].role is OperatorRole.ADMIN

    token, _ = await logins.log_in(session, "ana.agent", PASSWORD)
    await account_actions.disable_account(session, "ana.agent", actor=admin)
    assert await logins.find_login(session, token) is None  # the open login ended
    with pytest.raises(Unauthorized, match="unknown operator or wrong password"):
        await logins.log_in(session, "ana.agent", PASSWORD)

    await account_actions.enable_account(session, "ana.agent", actor=admin)
    token, _ = await logins.log_in(session, "ana.agent", PASSWORD)
    assert await logins.find_login(session, token) is not None

    new_password = await account_actions.reset_password(session, "ana.agent", None, actor=admin)
    assert len(new_password) == 16 and new_password != PASSWORD
    assert await logins.find_login(session, token) is None
    with pytest.raises(Unauthorized, match="wrong password"):
        await logins.log_in(session, "ana.agent", PASSWORD)
    token, _ = await logins.log_in(session, "ana.agent", new_password)

    await account_actions.remove_account(session, " ana.agent ", actor=admin)
    assert await operators.operator_by_username(session, "ana.agent") is None
    assert await logins.find_login(session, token) is None

    assert await _audited(session, agent_id) == [
        ("operator.added", "zoe.admin", "ana.agent"),
        ("operator.disabled", "zoe.admin", "ana.agent"),
        ("operator.enabled", "zoe.admin", "ana.agent"),
        ("operator.password_reset", "zoe.admin", "ana.agent"),
        ("operator.removed", "zoe.admin", "ana.agent"),
    ]
    removed = await audit.list_audit(session, subject_id=agent_id, action="operator.removed")
    assert removed[0].details == {"username": "ana.agent", "role": "agent", "logins_ended": 1}


async def test_the_last_admin_and_ones_own_account_are_refused(session: AsyncSession) -> None:
    admin_id = await _only_admin(session, "zoe.admin")
    admin = AccountActor("zoe.admin", admin_id, "from the console")
    for act in (account_actions.disable_account, account_actions.remove_account):
        with pytest.raises(Conflict, match="your own account"):
            await act(session, "zoe.admin", actor=admin)
        with pytest.raises(Conflict, match="last active admin"):
            await act(session, "zoe.admin", actor=COMMAND_LINE)
    # With a second admin, the first may go.
    await account_actions.add_account(
        session, "bia.admin", PASSWORD, OperatorRole.ADMIN, actor=COMMAND_LINE
    )
    await account_actions.disable_account(session, "zoe.admin", actor=COMMAND_LINE)
    stored = await operators.operator_by_username(session, "zoe.admin")
    assert stored is not None and stored.disabled
    with pytest.raises(Conflict, match="'bia.admin' is the last active admin"):
        await account_actions.remove_account(session, "bia.admin", actor=COMMAND_LINE)
    refused = await audit.list_audit(session, subject_id=admin_id, action="operator.removed")
    assert refused == []  # a refused action leaves no audit entry


async def test_an_unknown_account_and_a_short_password_are_refused(session: AsyncSession) -> None:
    with pytest.raises(NotFound, match="no operator account 'nobody'"):
        await account_actions.disable_account(session, "nobody", actor=COMMAND_LINE)
    await account_actions.add_account(
        session, "ana.agent", PASSWORD, OperatorRole.AGENT, actor=COMMAND_LINE
    )
    with pytest.raises(OperatorAccountError, match="at least 10 characters"):
        await account_actions.reset_password(session, "ana.agent", "short", actor=COMMAND_LINE)

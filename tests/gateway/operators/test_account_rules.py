"""The rules of account actions: nobody disables or removes their own account, and the last
admin who may log in stays."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.operators.account_rules import AccountAction, refusal
from gateway.storage.repositories.operators import OperatorAccount, OperatorRole

CREATED = datetime(2026, 12, 1, tzinfo=UTC)


def _account(id_: str, role: OperatorRole, *, disabled: bool = False) -> OperatorAccount:
    return OperatorAccount(
        id_, f"user-{id_}", "scrypt$x", role, CREATED if disabled else None, CREATED
    )


ADMIN = _account("a1", OperatorRole.ADMIN)
OTHER_ADMIN = _account("a2", OperatorRole.ADMIN)
AGENT = _account("g1", OperatorRole.AGENT)
DISABLED_ADMIN = _account("a3", OperatorRole.ADMIN, disabled=True)


@pytest.mark.parametrize("action", [AccountAction.DISABLE, AccountAction.REMOVE])
def test_nobody_disables_or_removes_their_own_account(action: AccountAction) -> None:
    why = refusal(action, ADMIN, actor_id="a1", active_admin_ids=("a1", "a2"))
    assert why is not None and "your own account" in why


@pytest.mark.parametrize("action", [AccountAction.DISABLE, AccountAction.REMOVE])
def test_the_last_active_admin_stays(action: AccountAction) -> None:
    why = refusal(action, ADMIN, actor_id=None, active_admin_ids=("a1",))
    assert why == (
        "'user-a1' is the last active admin: make another admin first"
        " (relaydesk operator add NAME --admin)"
    )
    assert refusal(action, ADMIN, actor_id=None, active_admin_ids=("a1", "a2")) is None


@pytest.mark.parametrize("action", [AccountAction.DISABLE, AccountAction.REMOVE])
def test_an_agent_or_a_disabled_admin_is_never_the_last_admin(action: AccountAction) -> None:
    assert refusal(action, AGENT, actor_id="a1", active_admin_ids=("a1",)) is None
    assert refusal(action, DISABLED_ADMIN, actor_id=None, active_admin_ids=("a1",)) is None
    assert refusal(action, OTHER_ADMIN, actor_id="a1", active_admin_ids=("a1", "a2")) is None


@pytest.mark.parametrize("action", [AccountAction.ENABLE, AccountAction.RESET_PASSWORD])
def test_enabling_and_resetting_a_password_are_always_allowed(action: AccountAction) -> None:
    assert refusal(action, ADMIN, actor_id="a1", active_admin_ids=("a1",)) is None

"""The account actions of the CLI and the console: add, list, disable, enable, reset a
password, remove. Each runs in the caller's transaction, is checked against
`account_rules`, and is audited (`operator.<action>`, subject the account's id).

Disabling, resetting a password and removing end the account's open logins; a login is read
again on every request, so the next one of a disabled account is already refused.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.http.errors import Conflict, NotFound
from gateway.operators.account_rules import ENDS_LOGINS, AccountAction, refusal
from gateway.operators.accounts import create_operator, hash_new_password
from gateway.operators.logins import OperatorLogin
from gateway.runtime.clock import utcnow
from gateway.storage.repositories import audit, operators
from gateway.storage.repositories.operators import OperatorAccount, OperatorRole

# A generated password: 16 URL-safe characters (96 random bits), shown once.
_GENERATED_BYTES = 12


@dataclass(frozen=True, slots=True)
class AccountActor:
    """Who acts on an account: a console login (its account id), or the API key or the
    command line (no account)."""

    name: str
    operator_id: str | None
    reason: str

    @classmethod
    def of_login(cls, login: OperatorLogin) -> AccountActor:
        return cls(login.username, login.operator_id, "from the console")


COMMAND_LINE = AccountActor("command-line", None, "from the command line")


async def add_account(
    session: AsyncSession,
    username: str,
    password: str,
    role: OperatorRole,
    *,
    actor: AccountActor,
) -> str:
    """Create an account; returns its id. Raises `OperatorAccountError` or `Conflict`."""
    operator_id = await create_operator(session, username, password, role=role)
    await _audit(session, AccountAction.ADD, operator_id, username.strip(), role, actor, 0)
    return operator_id


async def list_accounts(session: AsyncSession) -> tuple[OperatorAccount, ...]:
    return await operators.list_operators(session)


async def disable_account(session: AsyncSession, username: str, *, actor: AccountActor) -> None:
    target = await _checked(session, AccountAction.DISABLE, username, actor)
    if target.disabled_at is None:
        await operators.set_disabled_at(session, target.id, utcnow())
    await _done(session, AccountAction.DISABLE, target, actor)


async def enable_account(session: AsyncSession, username: str, *, actor: AccountActor) -> None:
    target = await _checked(session, AccountAction.ENABLE, username, actor)
    await operators.set_disabled_at(session, target.id, None)
    await _done(session, AccountAction.ENABLE, target, actor)


async def reset_password(
    session: AsyncSession, username: str, new_password: str | None, *, actor: AccountActor
) -> str:
    """Give the account a new password (generated when `new_password` is None); returns it.
    Raises `OperatorAccountError` for a password too short."""
    password = new_password if new_password is not None else generated_password()
    hashed = await hash_new_password(password)
    target = await _checked(session, AccountAction.RESET_PASSWORD, username, actor)
    await operators.set_password_hash(session, target.id, hashed)
    await _done(session, AccountAction.RESET_PASSWORD, target, actor)
    return password


async def remove_account(session: AsyncSession, username: str, *, actor: AccountActor) -> None:
    target = await _checked(session, AccountAction.REMOVE, username, actor)
    ended = await operators.close_logins_of(session, target.id)
    await operators.remove_operator(session, target.id)
    await _audit(
        session, AccountAction.REMOVE, target.id, target.username, target.role, actor, ended
    )


def generated_password() -> str:
    return secrets.token_urlsafe(_GENERATED_BYTES)


async def _checked(
    session: AsyncSession, action: AccountAction, username: str, actor: AccountActor
) -> OperatorAccount:
    """The account, once the rules allow `action` on it. Raises `NotFound` or `Conflict`."""
    # Locked first, so that two admins disabling each other at once wait for one another.
    active_admins = await operators.lock_active_admins(session)
    target = await operators.operator_by_username(session, username.strip())
    if target is None:
        raise NotFound(f"no operator account {username.strip()!r}")
    why = refusal(action, target, actor_id=actor.operator_id, active_admin_ids=active_admins)
    if why is not None:
        raise Conflict(why, code="account_action_refused")
    return target


async def _done(
    session: AsyncSession, action: AccountAction, target: OperatorAccount, actor: AccountActor
) -> None:
    ended = await operators.close_logins_of(session, target.id) if action in ENDS_LOGINS else 0
    await _audit(session, action, target.id, target.username, target.role, actor, ended)


async def _audit(
    session: AsyncSession,
    action: AccountAction,
    operator_id: str,
    username: str,
    role: OperatorRole,
    actor: AccountActor,
    logins_ended: int,
) -> None:
    await audit.record_audit(
        session,
        actor=actor.name,
        action=f"operator.{action.value}",
        reason=actor.reason,
        subject_type="operator",
        subject_id=operator_id,
        details={"username": username, "role": role.value, "logins_ended": logins_ended},
    )

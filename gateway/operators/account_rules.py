"""What may be done to an operator account, decided without I/O.

Two rules keep a deployment administrable: nobody disables or removes their own account (an
admin would lock themselves out halfway through a change), and the last admin who may log in
is never disabled or removed (nobody could manage accounts, settings or erasures any more).
"""

from __future__ import annotations

from collections.abc import Collection
from enum import StrEnum

from gateway.storage.repositories.operators import OperatorAccount, OperatorRole


class AccountAction(StrEnum):
    """An action on an account, also its audit action (`operator.<value>`)."""

    ADD = "added"
    DISABLE = "disabled"
    ENABLE = "enabled"
    RESET_PASSWORD = "password_reset"
    REMOVE = "removed"


# The actions that end an account's open logins.
ENDS_LOGINS = frozenset({AccountAction.DISABLE, AccountAction.RESET_PASSWORD, AccountAction.REMOVE})
_LOCKING_OUT = frozenset({AccountAction.DISABLE, AccountAction.REMOVE})


def refusal(
    action: AccountAction,
    target: OperatorAccount,
    *,
    actor_id: str | None,
    active_admin_ids: Collection[str],
) -> str | None:
    """Why `action` may not be done to `target` (None: it may). `actor_id` is the acting
    account's id, None for the API key or the command line; `active_admin_ids` the admins
    who may log in now."""
    if action not in _LOCKING_OUT:
        return None
    verb = "disable" if action is AccountAction.DISABLE else "remove"
    if target.id == actor_id:
        return f"you cannot {verb} your own account; ask another admin"
    last_admin = (
        target.role is OperatorRole.ADMIN
        and not target.disabled
        and set(active_admin_ids) <= {target.id}
    )
    if last_admin:
        return (
            f"{target.username!r} is the last active admin: make another admin first"
            " (relaydesk operator add NAME --admin)"
        )
    return None

"""The writes held for a decision, as the console shows them: a conversation's latest (for the
customer's confirmation or an operator's approval, and what came of them), and those still
waiting for an operator anywhere. Values are masked (phone numbers, e-mails, card numbers)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.repositories import confirmations
from gateway.storage.repositories.confirmations import ConfirmationRecord
from gateway.turns.answer.actions import masked

__all__ = ["HeldAction", "HeldState", "held_actions", "state_of", "waiting_approvals"]

HeldState = Literal[
    "waiting", "approval", "sent", "cancelled", "approved", "rejected", "expired", "unknown"
]
_STATES: Final[Mapping[str, HeldState]] = {
    state: state
    for state in ("waiting", "approval", "sent", "cancelled", "approved", "rejected", "expired")
}
# The latest held writes a conversation page lists; the approvals the list page shows.
CONVERSATION_LIMIT: Final = 20
WAITING_LIMIT: Final = 50


def state_of(held: ConfirmationRecord, now: datetime) -> HeldState:
    """The row's status, or `expired` once a write still undecided is past its time."""
    undecided = held.status in (confirmations.WAITING, confirmations.APPROVAL)
    if undecided and now >= held.expires_at:
        return "expired"
    return _STATES.get(held.status, "unknown")


@dataclass(frozen=True, slots=True)
class HeldAction:
    id: str
    action: str
    values: tuple[tuple[str, str], ...]  # (argument, masked value)
    state: HeldState
    asked_at: datetime
    expires_at: datetime
    decided_at: datetime | None
    customer_id: str
    conversation_id: str | None = None  # on the list of approvals: where to decide it


def _values(arguments_json: str) -> tuple[tuple[str, str], ...]:
    try:
        arguments = json.loads(arguments_json)
    except ValueError:
        return (("arguments", masked(arguments_json)),)
    if not isinstance(arguments, dict):
        return (("arguments", masked(arguments_json)),)
    return tuple(
        (
            str(name),
            masked(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)),
        )
        for name, value in arguments.items()
    )


def _held(record: ConfirmationRecord, now: datetime, conversation_id: str | None) -> HeldAction:
    return HeldAction(
        id=record.id,
        action=record.action,
        values=_values(record.arguments_json),
        state=state_of(record, now),
        asked_at=record.created_at,
        expires_at=record.expires_at,
        decided_at=record.decided_at,
        customer_id=record.customer_id,
        conversation_id=conversation_id,
    )


async def held_actions(
    session: AsyncSession, conversation_key: str, now: datetime
) -> tuple[HeldAction, ...]:
    """The conversation's latest held writes, newest first."""
    found = await confirmations.of_conversation(session, conversation_key, limit=CONVERSATION_LIMIT)
    return tuple(_held(record, now, None) for record in found)


async def waiting_approvals(session: AsyncSession, now: datetime) -> tuple[HeldAction, ...]:
    """The writes an operator may still approve, oldest first, each with its conversation."""
    found = await confirmations.awaiting_approval(session, now, limit=WAITING_LIMIT)
    return tuple(_held(item.record, now, item.conversation_id) for item in found)

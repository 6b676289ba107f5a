"""What the console shows of action calls: a turn's, from its report (`report["actions"]`),
and a customer's latest, from the audit rows (arguments already masked there)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.records import AuditRecord, TurnRecord
from gateway.storage.repositories import turns
from gateway.storage.repositories.action_audit import ACTION_PREFIX, recent_action_rows
from gateway.tools.names import START_VERIFICATION

__all__ = ["AuditedCall", "TurnCall", "TurnTrace", "recent_calls", "turn_trace"]

# The customer's latest calls and decisions the profile lists.
RECENT_CALLS: Final = 50


@dataclass(frozen=True, slots=True)
class AuditedCall:
    """One audit row of a call (`event`: ok, failed, refused, invalid, awaiting_confirmation)
    or of an operator's decision on one (approved, rejected; `status` the call's outcome)."""

    at: datetime
    actor: str
    event: str
    tool: str
    status: str
    link_level: str
    channel: str
    arguments: str
    http_status: int | None
    turn_id: int | None


@dataclass(frozen=True, slots=True)
class TurnCall:
    tool: str
    status: str
    http_status: int | None
    latency_ms: float
    dropped: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TurnTrace:
    """A turn as it was answered, with the action calls made on the way."""

    id: int
    status: str
    provider: str | None
    model: str | None
    attempts: int
    prompt_tokens: int
    completion_tokens: int
    error: str | None
    calls: tuple[TurnCall, ...]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _audited(entry: AuditRecord) -> AuditedCall:
    details = entry.details
    if not entry.action.startswith(ACTION_PREFIX):
        return _verification(entry)
    return AuditedCall(
        at=entry.created_at,
        actor=entry.actor,
        event=entry.action.removeprefix(ACTION_PREFIX),
        tool=_text(details.get("tool")),
        status=_text(details.get("status")),
        link_level=_text(details.get("link_level")),
        channel=_text(details.get("channel")),
        arguments=_text(details.get("arguments")),
        http_status=_int(details.get("http_status")),
        turn_id=_int(details.get("turn_id")),
    )


def _verification(entry: AuditRecord) -> AuditedCall:
    """A step-up row as a call: a code sent (or not) for `start_verification`, or one typed
    back (the event: verified, wrong, expired, locked, proposed)."""
    details = entry.details
    started = "identifier" in details
    return AuditedCall(
        at=entry.created_at,
        actor=entry.actor,
        event=entry.action,
        tool=START_VERIFICATION if started else "code typed back",
        status=_text(details.get("outcome") or details.get("evidence")),
        link_level=_text(details.get("link_level")),
        channel=_text(details.get("channel")),
        arguments=_text(details.get("identifier")) or _text(details.get("identifier_kind")),
        http_status=None,
        turn_id=None,
    )


def turn_calls(report: Mapping[str, Any] | None) -> tuple[TurnCall, ...]:
    """The calls a turn's report lists (none when it offered no actions)."""
    listed = (report or {}).get("actions")
    if not isinstance(listed, list):
        return ()
    calls: list[TurnCall] = []
    for item in listed:
        if not isinstance(item, dict):
            continue
        latency = item.get("latency_ms")
        dropped = item.get("dropped")
        calls.append(
            TurnCall(
                tool=_text(item.get("action")),
                status=_text(item.get("status")),
                http_status=_int(item.get("http_status")),
                latency_ms=float(latency) if isinstance(latency, int | float) else 0.0,
                dropped=tuple(str(name) for name in dropped) if isinstance(dropped, list) else (),
            )
        )
    return tuple(calls)


def _trace(turn: TurnRecord) -> TurnTrace:
    return TurnTrace(
        id=turn.id,
        status=turn.status,
        provider=turn.provider,
        model=turn.model,
        attempts=turn.attempts,
        prompt_tokens=turn.prompt_tokens,
        completion_tokens=turn.completion_tokens,
        error=turn.error,
        calls=turn_calls(turn.report),
    )


async def turn_trace(session: AsyncSession, message_id: int) -> TurnTrace | None:
    """The turn a customer message started, if it did."""
    turn = await turns.turn_for_message(session, message_id)
    return _trace(turn) if turn is not None else None


async def recent_calls(
    session: AsyncSession, customer_id: str, *, limit: int = RECENT_CALLS
) -> tuple[AuditedCall, ...]:
    """The customer's latest action calls and decisions, newest first."""
    found = await recent_action_rows(session, customer_id, limit=limit)
    return tuple(_audited(entry) for entry in found)

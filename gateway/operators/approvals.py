"""An operator's decision on a write held for approval (`approval: "operator"`).

Approving sends it once, as a write the customer confirmed: through the `ActionRunner`, for
the customer and channel identity it was asked for (their link level and scopes as they are
now), with the held row's id as `Idempotency-Key`. The decision is the repository's
compare-and-set on the row's status, so two operators approving at once send it once; the
second is told it was already decided. Rejecting sends nothing. Either way the decision is an
audit row (`action.approved` | `action.rejected`, the operator as actor, with the call's
outcome) and the customer is told the outcome in an operator's message. A held write past the
tenant's `confirmation_ttl_s` is expired, not sent.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from gateway.events.outbox import TOOL_CALLED, EventOutbox
from gateway.http.errors import Conflict, NotFound
from gateway.operators.held_actions import state_of
from gateway.operators.preview import preview_identity
from gateway.providers.tool_calls import ToolCall
from gateway.runtime.clock import utcnow
from gateway.runtime.metrics import Metrics
from gateway.storage.records import ConversationRecord
from gateway.storage.repositories import confirmations, conversations, customers, tenants
from gateway.storage.repositories.audit import record_audit
from gateway.storage.repositories.confirmations import ConfirmationRecord
from gateway.tenants import TenantSettings
from gateway.tools.approvals import APPROVED_FAILED_MESSAGE, APPROVED_MESSAGE, REJECTED_MESSAGE
from gateway.tools.catalog import ActionSpec, catalog_of
from gateway.tools.runner import ActionRun, ActionRunner, Caller
from gateway.turns.answer.actions import masked, offered_actions
from gateway.turns.deliver import Deliverer
from gateway.turns.handoff import ConversationNotFound
from gateway.turns.operator_messages import NoRecipient, send_operator_message
from identity.levels import LinkLevel
from identity.tool_reach import KnownIdentifier

__all__ = ["ApprovalDeps", "Decided", "Decision", "decide_held"]

log = logging.getLogger("relaydesk.operators")

Decision = Literal["approve", "reject"]


@dataclass(frozen=True, slots=True)
class ApprovalDeps:
    sessions: async_sessionmaker[AsyncSession]
    counter: TokenCounter
    deliverer: Deliverer
    runner: ActionRunner
    events: EventOutbox | None = None
    metrics: Metrics | None = None
    region: str | None = None  # the deployment's default region (identity rules)


@dataclass(frozen=True, slots=True)
class Decided:
    """What came of a decision: the row's new status, the call's outcome when it was sent,
    and whether the customer was told."""

    status: Literal["approved", "rejected", "expired"]
    run: ActionRun | None = None
    told: bool = False

    @property
    def notice(self) -> str:
        if self.status == "expired":
            return "the action had expired: nothing was sent"
        told = "; the customer was told" if self.told else "; the customer could not be told"
        if self.run is None:
            return f"action rejected{told}"
        return f"action approved and sent: {self.run.status}{told}"


@dataclass(frozen=True, slots=True)
class _Prepared:
    """The held write with whom and what it would be sent for, read before any decision."""

    held: ConfirmationRecord
    conversation: ConversationRecord
    settings: TenantSettings
    caller: Caller
    offered: Mapping[str, ActionSpec]
    description: str


async def decide_held(
    deps: ApprovalDeps,
    conversation_id: str,
    held_id: str,
    decision: Decision,
    *,
    actor: str,
    reason: str,
) -> Decided:
    """Approve or reject the conversation's held write ``held_id``. Raises `NotFound` (no
    such write in this conversation) and `Conflict` (not waiting for an operator, or decided
    meanwhile)."""
    conversation, held = await _held_in(deps, conversation_id, held_id)
    state = state_of(held, utcnow())
    if state == "expired" and held.status == confirmations.APPROVAL:
        return await _expire(deps, held.id)
    if state != "approval":
        raise Conflict(f"this action is not waiting for an operator: {state}")
    prepared = await _prepare(deps, conversation, held)
    status: Literal["approved", "rejected"] = "approved" if decision == "approve" else "rejected"
    async with deps.sessions.begin() as session:
        won = await confirmations.decide(
            session, held.id, status, utcnow(), current=confirmations.APPROVAL
        )
    if not won:
        return await _lost(deps, held.id)
    run: ActionRun | None = None
    if decision == "approve":
        call = ToolCall(f"approved_{held.id[:16]}", held.action, held.arguments_json)
        run = await deps.runner.run(
            call,
            prepared.offered,
            prepared.caller,
            max_result_tokens=prepared.settings.max_result_tokens,
            idempotency_key=held.id,
            confirmed=True,
        )
    await _audit(deps, prepared, run, actor=actor, reason=reason)
    told = await _tell(deps, prepared, run, actor=actor)
    return Decided(status, run, told)


async def _held_in(
    deps: ApprovalDeps, conversation_id: str, held_id: str
) -> tuple[ConversationRecord, ConfirmationRecord]:
    async with deps.sessions() as session:
        conversation = await conversations.get(session, conversation_id)
        held = await confirmations.get(session, held_id)
    if conversation is None or held is None:
        raise NotFound("no such action waits in this conversation")
    if held.conversation_key != conversation.conversation_key:
        raise NotFound("no such action waits in this conversation")
    return conversation, held


async def _prepare(
    deps: ApprovalDeps, conversation: ConversationRecord, held: ConfirmationRecord
) -> _Prepared:
    """Whom and what the write would be sent for: the identity it was asked for, at its link
    level and scopes as they are now, and the tenant's actions that level reaches."""
    async with deps.sessions() as session:
        settings = await tenants.settings_for(session, held.tenant, channel=conversation.channel)
        _, identity = await preview_identity(
            session, held.customer_id, held.identity_id, tenant=held.tenant, region=deps.region
        )
        known = await customers.identifiers_of(session, held.customer_id)
    mcp = deps.runner.mcp
    served_by_mcp = all(tool.name != held.action for tool in settings.tools)
    listings = (
        await mcp.listings(settings.mcp_servers)
        if mcp is not None and settings.mcp_servers and served_by_mcp
        else ()
    )
    spec = catalog_of(settings.tools, settings.mcp_servers, listings).actions.get(held.action)
    caller = Caller(
        customer_id=held.customer_id,
        level=identity.level,
        channel=conversation.channel,
        conversation=held.conversation_key,
        allowed_scopes=identity.allowed_scopes,
        identifiers=tuple(
            KnownIdentifier(record.kind, record.value, LinkLevel.parse(record.link_level))
            for record in known
        ),
    )
    return _Prepared(
        held=held,
        conversation=conversation,
        settings=settings,
        caller=caller,
        offered=offered_actions(settings, identity.level, listings),
        description=(spec.description.rstrip(". ") if spec is not None else "") or held.action,
    )


async def _expire(deps: ApprovalDeps, held_id: str) -> Decided:
    async with deps.sessions.begin() as session:
        await confirmations.decide(
            session, held_id, confirmations.EXPIRED, utcnow(), current=confirmations.APPROVAL
        )
    return Decided("expired")


async def _lost(deps: ApprovalDeps, held_id: str) -> Decided:
    """The compare-and-set lost: decided meanwhile (a conflict), or expired since it was
    read (then recorded as expired)."""
    now = utcnow()
    async with deps.sessions() as session:
        held = await confirmations.get(session, held_id)
    if held is not None and held.status == confirmations.APPROVAL:
        return await _expire(deps, held_id)
    state = state_of(held, now) if held is not None else "erased"
    raise Conflict(f"this action was already decided: {state}")


async def _audit(
    deps: ApprovalDeps, prepared: _Prepared, run: ActionRun | None, *, actor: str, reason: str
) -> None:
    held, caller = prepared.held, prepared.caller
    decision = "rejected" if run is None else "approved"
    async with deps.sessions.begin() as session:
        await record_audit(
            session,
            actor=actor,
            action=f"action.{decision}",
            reason=reason,
            subject_type="customer",
            subject_id=held.customer_id,
            details={
                "tool": held.action,
                "kind": "write",
                "identity_id": held.identity_id,
                "link_level": caller.level.value,
                "channel": caller.channel,
                "arguments": masked(held.arguments_json),
                "status": run.status if run is not None else decision,
                "http_status": run.http_status if run is not None else None,
                "latency_ms": round(run.latency_ms, 1) if run is not None else 0.0,
                "turn_id": held.turn_id,
                "held_id": held.id,
            },
        )
        if run is not None and deps.events is not None and deps.events.enabled:
            await deps.events.record(
                session,
                TOOL_CALLED,
                {
                    "tool": held.action,
                    "outcome": run.status,
                    "customer_id": held.customer_id,
                    "conversation_key": held.conversation_key,
                    "link_level": caller.level.value,
                    "http_status": run.http_status,
                    "latency_ms": round(run.latency_ms, 1),
                    "turn_id": held.turn_id,
                },
            )
    if run is not None and deps.metrics is not None:
        deps.metrics.action_calls.labels(held.action, run.status).inc()


async def _tell(
    deps: ApprovalDeps, prepared: _Prepared, run: ActionRun | None, *, actor: str
) -> bool:
    """The outcome to the customer, as an operator's message whoever answers the
    conversation; False when it could not be (the decision stands)."""
    if run is None:
        template = REJECTED_MESSAGE
    else:
        template = APPROVED_MESSAGE if run.status == "ok" else APPROVED_FAILED_MESSAGE
    try:
        await send_operator_message(
            sessions=deps.sessions,
            counter=deps.counter,
            events=deps.events,
            deliverer=deps.deliverer,
            conversation_id=prepared.conversation.id,
            text=template.format(action=prepared.description),
            actor=actor,
            any_owner=True,
        )
    except (ConversationNotFound, NoRecipient) as exc:
        log.warning(
            "action outcome not told",
            extra={"fields": {"held_id": prepared.held.id, "why": type(exc).__name__}},
        )
        return False
    return True

"""An operator's changes to a customer's facts: corrections, pins, retractions.

A fact must be sourced to a stored message, so an operator's correction first writes an
*operator note*: a message with role ``operator`` on channel ``console`` in the customer's
``console`` episode (one per customer, opened on first use), holding the new value and the
reason. The corrected fact is a new row sourced to that note, confirmed, with confidence 1.0
and pinned (an operator's decision: a memory rebuild keeps it; unpin it to hand the key back
to compaction); the old row is marked superseded by it, so the history keeps both. Operator
notes are neither turns of a window nor input to compaction (those read only user and
assistant messages).

Every change writes an audit entry with the operator's username and the reason. Refusals are
`BadRequest` with a code (`reason_required`, `value_required`, `value_unchanged`,
`fact_not_current`); a fact that is not this customer's raises `RecordNotFound`.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from context import TokenCounter
from gateway.http.errors import BadRequest
from gateway.operators.reasons import check_reason
from gateway.storage.message_meta import MessageMeta
from gateway.storage.records import AuditRecord, FactRecord, MessageRecord, NewFact, NewMessage
from gateway.storage.repositories import audit, episodes, facts, messages, profiles

CONSOLE_CHANNEL = "console"
OPERATOR_ROLE = "operator"


async def all_facts(session: AsyncSession, customer_id: str) -> list[FactRecord]:
    """Every fact row of the customer, current and superseded, oldest first."""
    return await profiles.all_facts(session, customer_id)


async def console_episode(session: AsyncSession, customer_id: str) -> str:
    found = await profiles.first_episode_id(session, customer_id, CONSOLE_CHANNEL)
    if found is not None:
        return found
    opened = await episodes.open_episode(session, customer_id=customer_id, channel=CONSOLE_CHANNEL)
    return opened.id


async def operator_note(
    session: AsyncSession,
    counter: TokenCounter,
    customer_id: str,
    text: str,
    *,
    actor: str,
    action: str,
) -> MessageRecord:
    """Store an operator note in the customer's console episode (the source of what the
    operator asserted)."""
    episode_id = await console_episode(session, customer_id)
    return await messages.append_message(
        session,
        NewMessage(
            customer_id=customer_id,
            episode_id=episode_id,
            channel=CONSOLE_CHANNEL,
            role=OPERATOR_ROLE,
            text=text,
            token_count=counter.count(text),
            meta=MessageMeta(operator=actor, action=action),
        ),
    )


async def correct_fact(
    session: AsyncSession,
    counter: TokenCounter,
    customer_id: str,
    fact_id: int,
    value: str,
    *,
    actor: str,
    reason: str,
) -> tuple[FactRecord, AuditRecord]:
    """Supersede a current fact with the operator's value, sourced to an operator note."""
    why = check_reason(reason)
    value = value.strip()
    if not value:
        raise BadRequest("the corrected value is empty", code="value_required")
    old = await profiles.fact_by_id(session, customer_id, fact_id)
    if not old.is_current:
        raise BadRequest("only a current fact can be corrected", code="fact_not_current")
    if value == old.value:
        raise BadRequest("the corrected value equals the current one", code="value_unchanged")
    note = await operator_note(
        session,
        counter,
        customer_id,
        f"Operator {actor} corrected {old.key}: {old.value!r} -> {value!r}. Reason: {why}",
        actor=actor,
        action="correct_fact",
    )
    tags = tuple(dict.fromkeys((*old.tags, "operator")))
    new = await facts.record_fact(
        session,
        customer_id,
        NewFact(
            key=old.key,
            value=value,
            scope=old.scope,
            source_message_id=note.id,
            tags=tags,
            confidence=1.0,
            confirmed=True,
            pinned=True,
        ),
        single_valued=False,
    )
    if new.id == old.id:  # cannot happen (values differ), kept as a guard
        raise BadRequest("the corrected value equals the current one", code="value_unchanged")
    await profiles.supersede_fact(session, old.id, new.id)
    entry = await audit.record_audit(
        session,
        actor=actor,
        action="correct_fact",
        reason=why,
        subject_type="customer",
        subject_id=customer_id,
        details={
            "fact": old.id,
            "key": old.key,
            "old_value": old.value,
            "new_fact": new.id,
            "new_value": value,
            "note_message": note.id,
        },
    )
    return new, entry


async def set_fact_state(
    session: AsyncSession,
    customer_id: str,
    fact_id: int,
    change: str,
    *,
    actor: str,
    reason: str,
) -> tuple[FactRecord, AuditRecord]:
    """`change` is one of "pin", "unpin", "retract"."""
    why = check_reason(reason)
    old = await profiles.fact_by_id(session, customer_id, fact_id)
    if change == "pin":
        updated = await facts.set_pinned(session, customer_id, fact_id, True)
    elif change == "unpin":
        updated = await facts.set_pinned(session, customer_id, fact_id, False)
    elif change == "retract":
        if not old.is_current:
            raise BadRequest("only a current fact can be retracted", code="fact_not_current")
        updated = await facts.retract_fact(session, customer_id, fact_id)
    else:
        raise BadRequest(f"unknown fact change {change!r}")
    entry = await audit.record_audit(
        session,
        actor=actor,
        action=f"{change}_fact",
        reason=why,
        subject_type="customer",
        subject_id=customer_id,
        details={"fact": fact_id, "key": old.key, "value": old.value},
    )
    return updated, entry

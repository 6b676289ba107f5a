"""Deleting everything of a customer (LGPD art. 18 / GDPR art. 17), in the caller's
transaction.

Each table is cleared by one statement per table, by the indexed customer columns (or a
subquery over them), children before parents so the foreign keys hold at every statement.
Raw messages are immutable to the ORM (`models.ImmutableRowError` guards updates); an erasure
is the one path that deletes them, through Core statements that the guard does not see.

`lock_customers` takes the customers' rows for the transaction (PostgreSQL `FOR UPDATE`;
SQLite transactions are exclusive already): compaction's writes take the same rows first
(`customers.hold_customer`), so a compaction racing an erasure either finishes before the
erasure reads anything, or finds the customer gone and writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import (
    ActionConfirmation,
    AnchoredMessage,
    Campaign,
    ChannelIdentity,
    CompactionTrace,
    Conversation,
    ConversationFence,
    Customer,
    CustomerIdentifier,
    Episode,
    EpisodeSummary,
    Fact,
    IdempotencyKey,
    IdentityVerification,
    InboxMessage,
    Message,
    OutboundEvent,
    OutboundMessage,
    PendingLink,
    TurnRow,
)
from gateway.storage.repositories.scrub import chunks, names_any, rowcount, scrub_audit


@dataclass(frozen=True, slots=True)
class CustomerKeys:
    """What names the customers outside their own rows, read before they are deleted: the
    Redis keys are built from these, and free-form columns are searched for them."""

    customer_ids: tuple[str, ...]
    episode_ids: tuple[str, ...]
    identity_ids: tuple[str, ...]
    external_ids: tuple[str, ...]
    conversation_ids: tuple[str, ...]
    conversation_keys: tuple[str, ...]
    thread_keys: tuple[str, ...]
    # (channel, provider message id) of their inbound messages and waiting inbox rows.
    provider_messages: tuple[tuple[str, str], ...]

    @property
    def naming(self) -> tuple[str, ...]:
        """The ids a payload or response body names them by."""
        return self.customer_ids + self.episode_ids + self.conversation_ids + self.identity_ids


def _dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else ""


async def lock_customers(session: AsyncSession, customer_ids: Sequence[str]) -> list[str]:
    """The ids of `customer_ids` that exist, their rows locked until the commit."""
    query = select(Customer.id).where(Customer.id.in_(list(customer_ids))).order_by(Customer.id)
    if _dialect(session) == "postgresql":
        query = query.with_for_update()
    return list(await session.scalars(query))


async def absorbed_customers(session: AsyncSession, customer_id: str) -> list[str]:
    """`customer_id` and every customer merged into it, directly or through another merge."""
    found = [customer_id]
    frontier = [customer_id]
    while frontier:
        rows = await session.scalars(select(Customer.id).where(Customer.merged_into.in_(frontier)))
        frontier = [row for row in rows if row not in found]
        found.extend(frontier)
    return found


async def customer_keys(session: AsyncSession, customer_ids: Sequence[str]) -> CustomerKeys:
    ids = list(customer_ids)
    identities = (
        await session.execute(
            select(ChannelIdentity.id, ChannelIdentity.external_id).where(
                ChannelIdentity.customer_id.in_(ids)
            )
        )
    ).all()
    conversations = (
        await session.execute(
            select(Conversation.id, Conversation.conversation_key).where(
                Conversation.customer_id.in_(ids)
            )
        )
    ).all()
    turn_keys = await session.scalars(
        select(TurnRow.conversation_key).where(TurnRow.customer_id.in_(ids)).distinct()
    )
    threads: set[str] = set(
        await session.scalars(
            select(Message.thread_key)
            .where(Message.customer_id.in_(ids), Message.thread_key.is_not(None))
            .distinct()
        )
    )
    threads.update(external for _, external in identities)
    inbound = (
        await session.execute(
            select(Message.channel, Message.provider_message_id).where(
                Message.customer_id.in_(ids), Message.provider_message_id.is_not(None)
            )
        )
    ).all()
    waiting = (
        await session.execute(
            select(InboxMessage.channel, InboxMessage.provider_message_id).where(
                InboxMessage.thread_key.in_(sorted(threads))
            )
        )
    ).all()
    episodes = await session.scalars(select(Episode.id).where(Episode.customer_id.in_(ids)))
    return CustomerKeys(
        customer_ids=tuple(ids),
        episode_ids=tuple(episodes),
        identity_ids=tuple(identity_id for identity_id, _ in identities),
        external_ids=tuple(external for _, external in identities),
        conversation_ids=tuple(conversation_id for conversation_id, _ in conversations),
        conversation_keys=tuple(sorted({key for _, key in conversations} | set(turn_keys))),
        thread_keys=tuple(sorted(threads)),
        provider_messages=tuple(
            sorted({(c, p) for c, p in inbound if p} | {(c, p) for c, p in waiting})
        ),
    )


async def erase_customers(session: AsyncSession, keys: CustomerKeys) -> dict[str, int]:
    """Delete every row of the customers of `keys` (locked by `lock_customers` in this
    transaction) and scrub the audit rows about them; the rows removed, per table."""
    ids = list(keys.customer_ids)
    counts: dict[str, int] = {}

    async def run(table: str, statement: Any) -> None:
        result = await session.execute(statement.execution_options(synchronize_session=False))
        counts[table] = counts.get(table, 0) + rowcount(result)

    their_messages = select(Message.id).where(Message.customer_id.in_(ids))
    their_turns = select(TurnRow.id).where(TurnRow.customer_id.in_(ids))
    their_identities = select(ChannelIdentity.id).where(ChannelIdentity.customer_id.in_(ids))
    their_episodes = select(Episode.id).where(Episode.customer_id.in_(ids))

    await run(
        "outbound_messages",
        delete(OutboundMessage).where(
            or_(
                OutboundMessage.turn_id.in_(their_turns),
                OutboundMessage.reply_message_id.in_(their_messages),
            )
        ),
    )
    await run("turns", delete(TurnRow).where(TurnRow.customer_id.in_(ids)))
    await run("facts", delete(Fact).where(Fact.customer_id.in_(ids)))
    await run(
        "episode_summaries",
        delete(EpisodeSummary).where(
            or_(EpisodeSummary.customer_id.in_(ids), EpisodeSummary.episode_id.in_(their_episodes))
        ),
    )
    await run(
        "compaction_traces",
        delete(CompactionTrace).where(
            or_(
                CompactionTrace.customer_id.in_(ids),
                CompactionTrace.episode_id.in_(their_episodes),
            )
        ),
    )
    await _unlink_others(session, ids, their_identities)
    await run("messages", delete(Message).where(Message.customer_id.in_(ids)))
    campaigns = [
        campaign_id
        for part in chunks(keys.naming)
        for campaign_id in await session.scalars(
            select(Campaign.id).where(names_any(Campaign.variables, part))
        )
    ]
    await run("episodes", delete(Episode).where(Episode.customer_id.in_(ids)))
    if campaigns:
        await session.execute(
            update(Episode).where(Episode.campaign_id.in_(campaigns)).values(campaign_id=None)
        )
        await run(
            "anchored_messages",
            delete(AnchoredMessage).where(AnchoredMessage.campaign_id.in_(campaigns)),
        )
        await run("campaigns", delete(Campaign).where(Campaign.id.in_(campaigns)))
    await run(
        "action_confirmations",
        delete(ActionConfirmation).where(ActionConfirmation.customer_id.in_(ids)),
    )
    await run(
        "identity_verifications",
        delete(IdentityVerification).where(
            or_(
                IdentityVerification.customer_id.in_(ids),
                IdentityVerification.target_customer_id.in_(ids),
            )
        ),
    )
    await run("conversations", delete(Conversation).where(Conversation.customer_id.in_(ids)))
    if keys.conversation_keys:
        await run(
            "conversation_fences",
            delete(ConversationFence).where(
                ConversationFence.conversation_key.in_(list(keys.conversation_keys))
            ),
        )
    await run(
        "pending_links",
        delete(PendingLink).where(
            or_(
                PendingLink.target_customer_id.in_(ids),
                PendingLink.identity_id.in_(their_identities),
            )
        ),
    )
    await run(
        "customer_identifiers",
        delete(CustomerIdentifier).where(
            or_(
                CustomerIdentifier.customer_id.in_(ids),
                CustomerIdentifier.source_identity_id.in_(their_identities),
            )
        ),
    )
    await run(
        "channel_identities", delete(ChannelIdentity).where(ChannelIdentity.customer_id.in_(ids))
    )
    if keys.thread_keys:
        await run(
            "inbox_messages",
            delete(InboxMessage).where(InboxMessage.thread_key.in_(list(keys.thread_keys))),
        )
    for part in chunks(keys.naming):
        await run(
            "outbound_events", delete(OutboundEvent).where(names_any(OutboundEvent.payload, part))
        )
        await run(
            "idempotency_keys",
            delete(IdempotencyKey).where(names_any(IdempotencyKey.response_body, part)),
        )
    counts["audit_log_scrubbed"] = await scrub_audit(
        session,
        subject_ids=[*ids, *keys.conversation_ids],
        naming=[*ids, *keys.external_ids],
    )
    await run("customers", delete(Customer).where(Customer.id.in_(ids)))
    return {table: count for table, count in counts.items() if count}


async def _unlink_others(session: AsyncSession, ids: list[str], identities: Any) -> None:
    """Another customer's rows may still name one of these identities as their source (a
    record split off before, a pending link decided): the reference goes, the row stays."""
    others: list[tuple[Any, Any, Any]] = [
        (Episode, Episode.identity_id, Episode.customer_id),
        (Fact, Fact.source_identity_id, Fact.customer_id),
        (Conversation, Conversation.identity_id, Conversation.customer_id),
        (Message, Message.identity_id, Message.customer_id),
    ]
    for table, column, owner in others:
        await session.execute(
            update(table)
            .where(column.in_(identities), owner.not_in(ids))
            .values({column.key: None})
            .execution_options(synchronize_session=False)
        )

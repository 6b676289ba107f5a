"""Every row held about a group of customers (a survivor and those merged into it), read for
a data export (LGPD art. 18 / GDPR art. 15), each row as a JSON-ready mapping of its
columns. Read by the indexed customer columns, one statement per table."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import Table, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import (
    AuditEntry,
    ChannelIdentity,
    CompactionTrace,
    Conversation,
    Customer,
    CustomerIdentifier,
    Episode,
    EpisodeSummary,
    Fact,
    InboxMessage,
    Message,
    OutboundMessage,
    PendingLink,
    TurnRow,
)
from gateway.storage.repositories.tables import table_of

JsonRow = dict[str, Any]


def _plain(value: object) -> object:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


async def _read(session: AsyncSession, table: Table, where: Any, order: Any) -> list[JsonRow]:
    rows = await session.execute(select(table).where(where).order_by(order))
    return [{key: _plain(value) for key, value in row._mapping.items()} for row in rows]


async def customer_rows(
    session: AsyncSession, customer_ids: Sequence[str]
) -> dict[str, list[JsonRow]]:
    """The rows of every table that holds data of `customer_ids`, by section name."""
    ids = list(customer_ids)
    identities = select(ChannelIdentity.id).where(ChannelIdentity.customer_id.in_(ids))
    messages = select(Message.id).where(Message.customer_id.in_(ids))
    turns = select(TurnRow.id).where(TurnRow.customer_id.in_(ids))
    conversations = select(Conversation.id).where(Conversation.customer_id.in_(ids))
    threads = select(Message.thread_key).where(Message.customer_id.in_(ids))
    sections: list[tuple[str, type[Any], Any]] = [
        ("customers", Customer, Customer.id.in_(ids)),
        ("identities", ChannelIdentity, ChannelIdentity.customer_id.in_(ids)),
        ("identifiers", CustomerIdentifier, CustomerIdentifier.customer_id.in_(ids)),
        (
            "pending_links",
            PendingLink,
            or_(PendingLink.target_customer_id.in_(ids), PendingLink.identity_id.in_(identities)),
        ),
        ("conversations", Conversation, Conversation.customer_id.in_(ids)),
        ("episodes", Episode, Episode.customer_id.in_(ids)),
        ("messages", Message, Message.customer_id.in_(ids)),
        ("facts", Fact, Fact.customer_id.in_(ids)),
        ("summaries", EpisodeSummary, EpisodeSummary.customer_id.in_(ids)),
        ("compaction_traces", CompactionTrace, CompactionTrace.customer_id.in_(ids)),
        ("turns", TurnRow, TurnRow.customer_id.in_(ids)),
        (
            "deliveries",
            OutboundMessage,
            or_(OutboundMessage.turn_id.in_(turns), OutboundMessage.reply_message_id.in_(messages)),
        ),
        ("waiting_inbox", InboxMessage, InboxMessage.thread_key.in_(threads)),
        (
            "operator_actions",
            AuditEntry,
            or_(AuditEntry.subject_id.in_(ids), AuditEntry.subject_id.in_(conversations)),
        ),
    ]
    out: dict[str, list[JsonRow]] = {}
    for name, model, where in sections:
        table = table_of(model)
        out[name] = await _read(session, table, where, next(iter(table.primary_key.columns)))
    return out

"""The Core tables behind the ORM classes, for statements built once at import.

The hot paths (every inbound message, every reply) run a handful of statements each; building
and cache-keying a statement costs more CPU than executing it, so those are module constants
with bind parameters, written against the tables (no ORM bulk-insert machinery per row).
"""

from __future__ import annotations

from typing import Any, TypeAlias

from sqlalchemy import Row, Table

from gateway.storage.models import (
    Base,
    ChannelIdentity,
    Conversation,
    ConversationFence,
    Customer,
    CustomerIdentifier,
    Episode,
    EpisodeSummary,
    Fact,
    InboxMessage,
    Message,
    TurnRow,
)

# A Core result row of any columns; its attributes are the column names (as on the ORM class).
AnyRow: TypeAlias = Row[*tuple[Any, ...]]


def table_of(model: type[Base]) -> Table:
    table = model.__table__
    if not isinstance(table, Table):  # every model here maps one table
        raise TypeError(f"{model.__name__} is not mapped to a table")
    return table


CUSTOMERS = table_of(Customer)
IDENTITIES = table_of(ChannelIdentity)
IDENTIFIERS = table_of(CustomerIdentifier)
EPISODES = table_of(Episode)
SUMMARIES = table_of(EpisodeSummary)
FACTS = table_of(Fact)
MESSAGES = table_of(Message)
TURNS = table_of(TurnRow)
FENCES = table_of(ConversationFence)
INBOX = table_of(InboxMessage)
CONVERSATIONS = table_of(Conversation)

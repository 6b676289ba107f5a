"""The unified profile an operator sees: everything stored about one customer, read at once."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.storage.records import (
    ChannelIdentityRecord,
    CompactionTraceRecord,
    CustomerRecord,
    EpisodeRecord,
    FactRecord,
    IdentifierRecord,
    MessageRecord,
    PendingLinkRecord,
    SummaryRecord,
)


@dataclass(frozen=True, slots=True)
class Profile:
    customer: CustomerRecord
    identities: tuple[ChannelIdentityRecord, ...]
    identifiers: tuple[IdentifierRecord, ...]
    pending: tuple[PendingLinkRecord, ...]
    facts: tuple[FactRecord, ...]  # every row: current, superseded and retracted
    episodes: tuple[tuple[EpisodeRecord, tuple[MessageRecord, ...]], ...]  # recent messages
    summaries: tuple[SummaryRecord, ...]
    traces: tuple[CompactionTraceRecord, ...]

"""Typed writes of the answer and deliver steps and of compaction: what a turn became, what
one delivery attempt did, what a compaction run left behind.

A field left `None` is not written (a turn's columns keep what they held), so each kind of
outcome always writes the same few columns and its UPDATE is built once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True, slots=True)
class TurnUsage:
    """The model's tokens for one reply, as its provider reported them."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0


@dataclass(frozen=True, slots=True)
class DeliveryClaim:
    """The delivery columns a reply is stored with: the deliver step's lease, taken in the
    reply's own transaction so its first send needs no claim of its own."""

    status: str
    lease_until: datetime


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """What answering a turn set on it: its status and, for a reply, the reply, the model's
    usage, the budget report (a JSON document) and the delivery claim."""

    status: str
    reply_message_id: int | None = None
    provider: str | None = None
    model: str | None = None
    usage: TurnUsage | None = None
    attempts: int | None = None
    error: str | None = None
    report: Mapping[str, object] | None = None
    delivery: DeliveryClaim | None = None


@dataclass(frozen=True, slots=True)
class DeliveryOutcome:
    """One delivery attempt's result: the lease is always let go; `error` kept when given."""

    status: str
    attempts: int
    error: str | None = None


@dataclass(frozen=True, slots=True)
class NewCompactionTrace:
    """One compaction run: the facts and summary before and after, the model's tokens."""

    customer_id: str
    compactor: str
    episode_id: str | None = None
    model: str | None = None
    error: str | None = None
    facts_before: Mapping[str, object] = field(default_factory=dict)
    facts_after: Mapping[str, object] = field(default_factory=dict)
    summary_before: str | None = None
    summary_after: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    duration_ms: int = 0

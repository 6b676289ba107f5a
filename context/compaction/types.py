"""Typed values of the compaction rules: the messages compacted, the facts and summary sentences
they yield, the plan of a compaction and its result.

Message ids are the storage's integer primary keys, increasing with arrival inside an episode; the
rules rely on that order ("newer message wins") and never on timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Final

from context.dates import day_text, with_date_notes
from context.errors import ContextInputError
from context.inputs import Role

__all__ = [
    "FACT_SCOPES",
    "MULTI_VALUED_KEYS",
    "RULE_KEYS",
    "CompactionPlan",
    "CompactionResult",
    "ExtractedFact",
    "SourceMessage",
    "SummarySentence",
    "SummaryState",
]

# The fact schema: key → scope. A fact's scope is always looked up here, never read from the
# message, so text such as "scope: payment" cannot widen who may see a value.
FACT_SCOPES: Final[dict[str, str]] = {
    "email": "profile",
    "phone": "profile",
    "name": "profile",
    "postal_code": "profile",
    "preference": "profile",
    "contact_rule": "profile",
    "solution_mode": "profile",
    "solution_mode_exception": "profile",
    "order_id": "account",
    "protocol": "account",
    "pix_key": "payment",
}

# Keys that hold several values at once (two orders, two preferences, one exception per list).
# A new value of these keys adds a fact; only a new value of any other key supersedes.
MULTI_VALUED_KEYS: Final = frozenset(
    {"order_id", "protocol", "preference", "contact_rule", "solution_mode_exception"}
)

# Keys that are rules agreed with the customer; the window ranks them first.
RULE_KEYS: Final = frozenset({"contact_rule", "solution_mode", "solution_mode_exception"})


@dataclass(frozen=True, slots=True)
class SourceMessage:
    """One stored message of the episode, as the compaction rules read it.

    ``speaker`` is a display name when the channel knows one (a transcript's speaker label, a
    participant's name); ``confidence`` is the transcript confidence of voice channels.
    """

    id: int
    role: Role
    text: str
    tokens: int
    created_at: datetime
    channel: str
    speaker: str | None = None
    confidence: float | None = None

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ContextInputError("invalid_role", f"message {self.id} has role {self.role!r}")
        if self.tokens < 0:
            raise ContextInputError("invalid_tokens", f"message {self.id} has {self.tokens} tokens")
        if self.confidence is not None and not 0.0 <= self.confidence <= 1.0:
            raise ContextInputError(
                "invalid_confidence",
                f"message {self.id} confidence {self.confidence} not in [0, 1]",
            )


@dataclass(frozen=True, slots=True)
class ExtractedFact:
    """A fact proposed by a compactor, not yet stored.

    ``kind`` names the rule that produced it (``pix_cpf``, ``email``, …; a model compactor may use
    the key). Nothing is checked on construction: facts from a model are untrusted input, and
    ``guard.validate`` refuses bad ones with a reason instead of raising.
    """

    key: str
    value: str
    scope: str
    source_message_id: int
    confidence: float
    tags: tuple[str, ...] = ()
    kind: str = ""

    @property
    def is_rule(self) -> bool:
        return self.key in RULE_KEYS or "rule" in self.tags

    @property
    def slot(self) -> tuple[str, str]:
        """What a newer fact replaces: the key alone, or key and value for multi-valued keys."""
        if self.key in MULTI_VALUED_KEYS:
            return (self.key, self.value.casefold())
        return (self.key, "")


@dataclass(frozen=True, slots=True)
class SummarySentence:
    """One sentence of an extractive summary, with the message it was taken from.

    ``date`` is the ISO date of that message; ``speaker`` its display name or role.
    """

    text: str
    source_message_id: int
    date: str
    speaker: str | None = None

    def render(self) -> str:
        """The summary line: ``[8 May 2023] Caroline: text``, with its relative time words
        resolved after it (``(yesterday = 7 May 2023)``)."""
        try:
            day: date | None = date.fromisoformat(self.date)
        except ValueError:
            day = None
        shown = day_text(day) if day is not None else self.date
        line = (
            f"[{shown}] {self.speaker}: {self.text}" if self.speaker else f"[{shown}] {self.text}"
        )
        return with_date_notes(line, self.text, day) if day is not None else line


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """Which unsummarized messages a compaction consumes and which stay whole.

    ``compact_ids`` is a prefix of the unsummarized messages (oldest first) and ``keep_ids`` the
    rest; ``new_pointer`` is the last compacted id, the summary's new ``last_message_id``.
    """

    compact_ids: tuple[int, ...]
    keep_ids: tuple[int, ...]
    new_pointer: int | None


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What one compaction produced.

    ``facts`` are the accepted facts in message order; a key may appear more than once, the last
    value being current and the earlier ones superseded (see ``facts.supersessions``).
    ``refused`` pairs each refused fact with the reason (``guard.REFUSAL_REASONS``).
    """

    facts: tuple[ExtractedFact, ...]
    summary: str
    sentences: tuple[SummarySentence, ...]
    refused: tuple[tuple[ExtractedFact, str], ...] = ()


@dataclass(frozen=True, slots=True)
class SummaryState:
    """The per-episode summary record: ``{summary, last_message_id}`` plus its sourced sentences.

    Every message with an id greater than ``last_message_id`` is unsummarized and enters the
    window whole.
    """

    summary: str = ""
    last_message_id: int | None = None
    sentences: tuple[SummarySentence, ...] = ()

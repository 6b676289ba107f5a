"""Typed inputs of ``build_window``; the gateway builds them from storage.

Token counts of stored items (turns, summaries, facts when known) are computed once at ingest and
passed in; the builder never recounts them. Only text it renders itself is counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Final, Literal

from context.errors import ContextInputError

if TYPE_CHECKING:
    from context.knowledge_index import KnowledgeIndex

__all__ = [
    "TRANSCRIPT_CHANNELS",
    "AnchoredMessage",
    "ContextRequest",
    "CurrentEpisode",
    "FactItem",
    "Instruction",
    "KnowledgeItem",
    "Modality",
    "OperationalState",
    "Role",
    "SummaryItem",
    "Turn",
]

Role = Literal["user", "assistant"]
Modality = Literal["typed", "transcript"]

# Channels whose text comes from speech recognition and so carries its uncertainty.
TRANSCRIPT_CHANNELS: Final = frozenset({"phone"})


def _check_confidence(owner: str, value: float | None) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise ContextInputError("invalid_confidence", f"{owner} confidence {value} not in [0, 1]")


def _check_tokens(owner: str, value: int | None) -> None:
    if value is not None and value < 0:
        raise ContextInputError("invalid_tokens", f"{owner} has negative token count {value}")


@dataclass(frozen=True, slots=True)
class Instruction:
    """The tenant's system instruction."""

    text: str


@dataclass(frozen=True, slots=True)
class AnchoredMessage:
    """A system message of an active campaign; it survives every cut."""

    id: str
    campaign_id: str
    text: str


@dataclass(frozen=True, slots=True)
class OperationalState:
    """Fixed operational fields: channel, link level, permissions, open ticket and extras.

    ``extra`` fields are rendered in the given order and are the only part of the state that may
    be dropped when the state slice is full (an extra that does not fit is skipped).
    """

    channel: str
    link_level: str
    allowed_scopes: tuple[str, ...]
    open_ticket: str | None = None
    extra: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class FactItem:
    """A durable fact already filtered by the scope policy.

    ``tokens`` is the stored count of ``value`` (``None``: the builder counts it).
    """

    id: str
    key: str
    value: str
    scope: str
    source_channel: str
    source_message_id: str
    learned_at: datetime
    tags: tuple[str, ...] = ()
    confidence: float = 1.0
    confirmed: bool = True
    pinned: bool = False
    is_rule: bool = False
    tokens: int | None = None

    def __post_init__(self) -> None:
        _check_confidence(f"fact {self.id!r}", self.confidence)
        _check_tokens(f"fact {self.id!r}", self.tokens)


@dataclass(frozen=True, slots=True)
class SummaryItem:
    """The summary of another (closed or earlier) episode, on any channel."""

    id: str
    episode_id: str
    channel: str
    modality: Modality
    started_at: datetime
    ended_at: datetime
    text: str
    tokens: int
    confidence: float | None = None

    def __post_init__(self) -> None:
        if self.modality not in ("typed", "transcript"):
            raise ContextInputError("invalid_modality", f"summary {self.id!r}: {self.modality!r}")
        _check_confidence(f"summary {self.id!r}", self.confidence)
        _check_tokens(f"summary {self.id!r}", self.tokens)


@dataclass(frozen=True, slots=True)
class Turn:
    """One stored message of the current episode; ``tokens`` was counted at ingest."""

    id: str
    role: Role
    text: str
    tokens: int
    channel: str
    created_at: datetime
    confidence: float | None = None

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ContextInputError("invalid_role", f"turn {self.id!r} has role {self.role!r}")
        _check_confidence(f"turn {self.id!r}", self.confidence)
        _check_tokens(f"turn {self.id!r}", self.tokens)


@dataclass(frozen=True, slots=True)
class CurrentEpisode:
    """The episode the current message belongs to.

    ``turns`` are its stored messages in chronological order after the part ``summary`` covers,
    excluding the current message itself. ``summary_tokens`` is the stored count of ``summary``
    (``None``: counted).
    """

    id: str
    channel: str
    turns: tuple[Turn, ...] = ()
    summary: str | None = None
    summary_tokens: int | None = None

    def __post_init__(self) -> None:
        _check_tokens(f"episode {self.id!r} summary", self.summary_tokens)


@dataclass(frozen=True, slots=True)
class KnowledgeItem:
    """One chunk of the tenant's knowledge base the customer may be told (the gateway filtered
    it by audience), with its document's title, URL and date.

    ``terms`` are what it is matched by (`context.knowledge.chunk_terms`), worked out once
    where chunks are cached; empty: the builder works them out. ``tokens`` is the stored count
    of ``text`` (``None``: counted).
    """

    id: str
    document_id: str
    title: str
    text: str
    updated_at: date
    url: str | None = None
    position: int = 0  # its order in the document
    tokens: int | None = None
    terms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_tokens(f"knowledge chunk {self.id!r}", self.tokens)


@dataclass(frozen=True, slots=True)
class ContextRequest:
    """Everything one window is built from.

    ``allowed_scopes`` defaults to ``state.allowed_scopes``; a fact outside it is refused
    (``ScopeViolation``). ``summaries`` are of *other* episodes. ``full_history_tokens`` is the
    stored token total of all the customer's messages (for the savings figure); when ``None`` the
    builder uses the current episode's turns plus the current message. ``subject_tags`` (e.g. the
    open ticket's topic) add to the relevance of facts carrying the same tags. ``knowledge``
    holds the candidate chunks of the tenant's documents; the builder keeps those relevant to
    the message (``knowledge_index``, when given, is built over them and ranks them faster).
    """

    instruction: Instruction
    state: OperationalState
    episode: CurrentEpisode
    message: str
    message_id: str = "current"
    anchored: tuple[AnchoredMessage, ...] = ()
    facts: tuple[FactItem, ...] = ()
    summaries: tuple[SummaryItem, ...] = ()
    allowed_scopes: frozenset[str] | None = None
    subject_tags: tuple[str, ...] = ()
    full_history_tokens: int | None = None
    knowledge: tuple[KnowledgeItem, ...] = ()
    knowledge_index: KnowledgeIndex | None = None
    # The cosine of the message with each of ``knowledge`` (None: no vector yet), for the
    # ranking by meaning; None: lexical ranking alone.
    knowledge_similarities: tuple[float | None, ...] | None = None

    def __post_init__(self) -> None:
        _check_tokens("request full history", self.full_history_tokens)
        similarities = self.knowledge_similarities
        if similarities is not None and len(similarities) != len(self.knowledge):
            raise ContextInputError(
                "knowledge_similarities_mismatch",
                "knowledge_similarities must hold one value per knowledge chunk",
            )
        index = self.knowledge_index
        if (
            index is not None
            and index.items is not self.knowledge
            and (index.items != self.knowledge)
        ):
            raise ContextInputError(
                "knowledge_index_mismatch", "knowledge_index is not built over the knowledge"
            )
        if self.allowed_scopes is not None and self.allowed_scopes != frozenset(
            self.state.allowed_scopes
        ):
            raise ContextInputError(
                "allowed_scopes_mismatch",
                "allowed_scopes differs from the operational state's allowed scopes",
            )

    @property
    def scopes(self) -> frozenset[str]:
        """The scopes facts may carry."""
        if self.allowed_scopes is not None:
            return self.allowed_scopes
        return frozenset(self.state.allowed_scopes)

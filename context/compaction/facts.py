"""Supersession of facts: which value of a key is current, and what a compaction changes.

A fact's slot (``ExtractedFact.slot``) is what a newer fact replaces: the key for single-valued
keys (``email``, ``pix_key``, ``solution_mode``), the key and value for multi-valued ones (two
order ids coexist). Within a slot the fact from the newer message wins; the older one is kept as
history, superseded by the correcting message (a corrected Pix key must never be paid to the old
one). Restating the current value changes nothing, so a rule keeps the message it was first
agreed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from context.compaction.types import ExtractedFact
from context.inputs import FactItem

__all__ = [
    "FactChanges",
    "current_facts",
    "dedupe",
    "merge_facts",
    "same_value",
    "supersessions",
    "to_fact_item",
]


def same_value(a: ExtractedFact, b: ExtractedFact) -> bool:
    """Equal values up to case and spacing (extracted identifiers are already normalized)."""
    return " ".join(a.value.casefold().split()) == " ".join(b.value.casefold().split())


def _ordered(facts: Iterable[ExtractedFact]) -> list[ExtractedFact]:
    # Stable: facts of one message keep their text order.
    return sorted(facts, key=lambda fact: fact.source_message_id)


def dedupe(facts: Iterable[ExtractedFact]) -> tuple[ExtractedFact, ...]:
    """``facts`` in message order without restatements: a fact equal to its slot's latest value
    is dropped. A→B→A keeps all three (A is current again, from the newest message)."""
    latest: dict[tuple[str, str], ExtractedFact] = {}
    out: list[ExtractedFact] = []
    for fact in _ordered(facts):
        previous = latest.get(fact.slot)
        if previous is not None and same_value(previous, fact):
            continue
        latest[fact.slot] = fact
        out.append(fact)
    return tuple(out)


def current_facts(facts: Iterable[ExtractedFact]) -> tuple[ExtractedFact, ...]:
    """The current fact of each slot (the newest message's), in message order."""
    latest: dict[tuple[str, str], ExtractedFact] = {}
    for fact in dedupe(facts):
        latest[fact.slot] = fact
    return tuple(_ordered(latest.values()))


def supersessions(
    facts: Iterable[ExtractedFact],
) -> tuple[tuple[ExtractedFact, ExtractedFact], ...]:
    """``(old, new)`` pairs in message order: ``new`` replaced ``old`` in its slot."""
    latest: dict[tuple[str, str], ExtractedFact] = {}
    pairs: list[tuple[ExtractedFact, ExtractedFact]] = []
    for fact in dedupe(facts):
        previous = latest.get(fact.slot)
        if previous is not None:
            pairs.append((previous, fact))
        latest[fact.slot] = fact
    return tuple(pairs)


@dataclass(frozen=True, slots=True)
class FactChanges:
    """What storing a compaction's facts does to the current facts.

    ``added`` are new rows to write (in order); ``superseded`` pairs ``(old, new)`` where ``old``
    is a stored or earlier added fact; ``unchanged`` are restatements of current values;
    ``stale`` are facts older than the stored value of their slot (a rebuild replaying old
    messages never overrides a newer correction).
    """

    added: tuple[ExtractedFact, ...] = ()
    superseded: tuple[tuple[ExtractedFact, ExtractedFact], ...] = ()
    unchanged: tuple[ExtractedFact, ...] = ()
    stale: tuple[ExtractedFact, ...] = ()


def merge_facts(
    existing: Sequence[ExtractedFact], incoming: Iterable[ExtractedFact]
) -> FactChanges:
    """Apply ``incoming`` (a compaction's facts) to the ``existing`` current facts."""
    current: dict[tuple[str, str], ExtractedFact] = {}
    for fact in _ordered(existing):
        current[fact.slot] = fact
    added: list[ExtractedFact] = []
    superseded: list[tuple[ExtractedFact, ExtractedFact]] = []
    unchanged: list[ExtractedFact] = []
    stale: list[ExtractedFact] = []
    for fact in _ordered(incoming):
        held = current.get(fact.slot)
        if held is None:
            added.append(fact)
        elif same_value(held, fact):
            unchanged.append(fact)
            continue
        elif fact.source_message_id < held.source_message_id:
            stale.append(fact)
            continue
        else:
            added.append(fact)
            superseded.append((held, fact))
        current[fact.slot] = fact
    return FactChanges(tuple(added), tuple(superseded), tuple(unchanged), tuple(stale))


def to_fact_item(
    fact: ExtractedFact,
    *,
    id: str,
    source_channel: str,
    learned_at: datetime,
    confirmed: bool = True,
    tokens: int | None = None,
) -> FactItem:
    """The window builder's view of a stored fact (its value is rendered quoted, as data)."""
    return FactItem(
        id=id,
        key=fact.key,
        value=fact.value,
        scope=fact.scope,
        source_channel=source_channel,
        source_message_id=str(fact.source_message_id),
        learned_at=learned_at,
        tags=fact.tags,
        confidence=fact.confidence,
        confirmed=confirmed,
        is_rule=fact.is_rule,
        tokens=tokens,
    )

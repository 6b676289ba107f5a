"""What linking needs to know about stored identities: the read-only `IdentityGraphView`.

The gateway answers four questions from storage before it calls `identity.resolve`; this module
states them as a protocol, gives a ready snapshot type to fill from query rows
(`GraphSnapshot.from_rows`) and says which rows one observation needs (`lookups_for`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from identity.evidence import IdentityObservation
from identity.levels import LinkLevel
from identity.normalize import ChannelIdentityKey, Identifier, IdentifierKind

__all__ = [
    "GraphLookups",
    "GraphSnapshot",
    "Holding",
    "IdentityGraphView",
    "IdentityLink",
    "lookups_for",
]


@dataclass(frozen=True, slots=True)
class IdentityLink:
    """A stored channel identity: the customer it belongs to and its stored link level;
    ``stepped_up``: verified by a one-time code typed back (`identity.step_up`)."""

    customer_id: str
    level: LinkLevel
    stepped_up: bool = False


@dataclass(frozen=True, slots=True)
class Holding:
    """A customer holding an identifier, at the strongest level any of its rows gives it."""

    customer_id: str
    level: LinkLevel


class IdentityGraphView(Protocol):
    """Read-only answers from storage, as of the moment the message is resolved."""

    def identity(self, key: ChannelIdentityKey) -> IdentityLink | None:
        """The customer and stored level of channel identity ``key``, if it is known."""
        ...

    def holders(self, identifier: Identifier) -> Iterable[Holding]:
        """Every customer that holds ``identifier``, once each, with its strongest level."""
        ...

    def identifier_count(self, customer_id: str, kind: IdentifierKind) -> int:
        """How many distinct identifiers of ``kind`` ``customer_id`` holds at *verified* level."""
        ...

    def has_customer(self, customer_id: str) -> bool:
        """Whether ``customer_id`` exists (and has not been merged away)."""
        ...


@dataclass(frozen=True, slots=True)
class GraphLookups:
    """The rows one observation needs.

    Fetch the channel identities in ``keys``, the holdings of every identifier in
    ``identifiers``, whether each id in ``customer_ids`` exists, and then the verified identifier
    counts of every customer those rows mention (plus ``customer_ids``).
    """

    keys: tuple[ChannelIdentityKey, ...]
    identifiers: tuple[Identifier, ...]
    customer_ids: tuple[str, ...]


def lookups_for(observation: IdentityObservation) -> GraphLookups:
    """The keys, identifiers and customers `identity.resolve` will ask about for ``observation``."""
    keys: tuple[ChannelIdentityKey, ...] = (observation.key,)
    for other in (observation.named_key, observation.previous_key):
        if other is not None:
            keys += (other,)
    identifiers = tuple(
        dict.fromkeys(observation.verified + observation.asserted + observation.inferred)
    )
    hint = (observation.customer_hint,) if observation.customer_hint is not None else ()
    return GraphLookups(keys=keys, identifiers=identifiers, customer_ids=hint)


@dataclass(frozen=True, slots=True)
class GraphSnapshot:
    """An `IdentityGraphView` over rows the gateway fetched for one observation.

    Anything not in the snapshot reads as absent: an unknown key, no holders, a count of zero.
    So the snapshot must hold every row `lookups_for` names, or linking decides on less than the
    truth (merge protection in particular relies on complete counts).
    """

    identities: Mapping[ChannelIdentityKey, IdentityLink]
    holdings: Mapping[Identifier, tuple[Holding, ...]]
    counts: Mapping[tuple[str, IdentifierKind], int]
    customers: frozenset[str]

    @classmethod
    def from_rows(
        cls,
        *,
        identities: Iterable[tuple[ChannelIdentityKey, str, LinkLevel]] = (),
        holdings: Iterable[tuple[Identifier, str, LinkLevel]] = (),
        counts: Iterable[tuple[str, IdentifierKind, int]] = (),
        customers: Iterable[str] = (),
        stepped_up: Iterable[ChannelIdentityKey] = (),
    ) -> GraphSnapshot:
        """Build from query rows: (key, customer, level), (identifier, customer, level) — any
        number of rows per identifier and customer — (customer, kind, verified count) and
        existing customer ids. Customers named by identity or holding rows count as existing.
        ``stepped_up``: the keys among the identities verified by a one-time code.
        """
        coded = frozenset(stepped_up)
        links = {
            key: IdentityLink(customer, level, key in coded) for key, customer, level in identities
        }
        strongest: dict[Identifier, dict[str, LinkLevel]] = {}
        for identifier, customer, level in holdings:
            per_customer = strongest.setdefault(identifier, {})
            current = per_customer.get(customer)
            if current is None or level > current:
                per_customer[customer] = level
        held = {
            identifier: tuple(Holding(customer, level) for customer, level in sorted(by.items()))
            for identifier, by in strongest.items()
        }
        known = set(customers)
        known.update(link.customer_id for link in links.values())
        known.update(h.customer_id for hs in held.values() for h in hs)
        return cls(
            identities=MappingProxyType(links),
            holdings=MappingProxyType(held),
            counts=MappingProxyType({(customer, kind): n for customer, kind, n in counts}),
            customers=frozenset(known),
        )

    def identity(self, key: ChannelIdentityKey) -> IdentityLink | None:
        return self.identities.get(key)

    def holders(self, identifier: Identifier) -> Iterable[Holding]:
        return self.holdings.get(identifier, ())

    def identifier_count(self, customer_id: str, kind: IdentifierKind) -> int:
        return self.counts.get((customer_id, kind), 0)

    def has_customer(self, customer_id: str) -> bool:
        return customer_id in self.customers

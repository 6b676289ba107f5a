"""The linking decision: which customer one observation belongs to, and what it may change.

Rules, in the order they are applied:

1. Blocked values link nothing. A blocked channel key is resolved on its own key only, at the
   anonymous level; blocked identifiers are ignored (no attachment, no pending link).
2. A known channel identity keeps its customer. Its stored level may rise to the level of new
   evidence for the same key and never falls (``identity_level``); the level for *this* message
   (``level``) is what this message's evidence supports, so a spoofable caller id on a number
   that was once verified still sees only what a caller id may see.
3. A new channel identity joins an existing customer only through a verified match: one of its
   verified identifiers is held at verified level by that customer, or a trusted upstream named
   that customer (``customer_hint``). Otherwise it gets a new customer.
4. Merge protection: a join that would give the customer more verified identifiers of a kind
   than `LinkLimits` allows does not happen; the identity gets a new customer and the match
   becomes a pending link (``merge_limit``). Verified matches to two different customers, or to
   another customer than the one a known identity already has, are never merged automatically
   (``verified_conflict``).
5. Asserted and inferred evidence never joins, merges or raises a level: a claim held by another
   customer becomes a pending link at the weaker of the two levels; an unheld claim is recorded
   on the resolved customer at its own level so a later verification can find it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from identity.blocked import DEFAULT_BLOCKED, BlockedValues
from identity.errors import IdentityConfigError
from identity.evidence import IdentityObservation
from identity.graph import IdentityGraphView, IdentityLink
from identity.levels import LinkLevel, weakest
from identity.normalize import ChannelIdentityKey, Identifier, IdentifierKind

__all__ = [
    "DEFAULT_LIMITS",
    "IdentifierLink",
    "LinkLimits",
    "Outcome",
    "PendingLink",
    "PendingReason",
    "Resolution",
    "resolve",
]

Outcome = Literal["known", "joined", "new"]
_LIMIT_KINDS = ("web_account", "phone", "email", "telegram")
PendingReason = Literal[
    "verified_conflict", "merge_limit", "asserted_match", "inferred_match", "same_device"
]


@dataclass(frozen=True, slots=True)
class LinkLimits:
    """Merge protection: at most this many verified identifiers of each kind per customer."""

    web_account: int = 1
    phone: int = 5
    email: int = 5
    telegram: int = 3

    def __post_init__(self) -> None:
        for name in _LIMIT_KINDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise IdentityConfigError(f"link limit {name} must be a positive integer")

    def limit(self, kind: IdentifierKind) -> int | None:
        """The limit for ``kind``, or ``None`` for kinds that are never attached as verified."""
        limits: dict[str, int] = {
            "web_account": self.web_account,
            "phone": self.phone,
            "email": self.email,
            "telegram": self.telegram,
        }
        return limits.get(kind)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> LinkLimits:
        """Load ``{"phone": 5, ...}`` over the defaults; raises `IdentityConfigError`."""
        values: dict[str, int] = {}
        for name, value in data.items():
            if name not in _LIMIT_KINDS:
                raise IdentityConfigError(f"unknown link limit {name!r}")
            if isinstance(value, bool) or not isinstance(value, int):
                raise IdentityConfigError(f"link limit {name} must be an integer")
            values[name] = value
        return replace(cls(), **values)


DEFAULT_LIMITS = LinkLimits()


@dataclass(frozen=True, slots=True)
class IdentifierLink:
    """An identifier to attach to the resolved customer, at ``level``, sourced from the key."""

    identifier: Identifier
    level: LinkLevel


@dataclass(frozen=True, slots=True)
class PendingLink:
    """A proposal for an operator: ``identity_key``'s customer may be ``candidate_customer``.

    ``via`` is the identifier that matched (the identity's own identifier when a trusted
    upstream named the customer, or the earlier identity for ``same_device``); ``level`` is the
    strength of that match. Confirming it is an operator merge.
    """

    identity_key: ChannelIdentityKey
    candidate_customer: str
    via: Identifier
    level: LinkLevel
    reason: PendingReason


@dataclass(frozen=True, slots=True)
class Resolution:
    """The decision for one observation.

    ``customer_id`` is ``None`` when a new customer must be created (``outcome == "new"``); the
    caller then stores the identity, ``attach`` and ``pending`` under the new id. ``level`` is the
    link level for this message (scopes); ``identity_level`` is what to store on the channel
    identity. ``refused`` lists verified identifiers left unattached by `LinkLimits`.
    """

    key: ChannelIdentityKey
    customer_id: str | None
    outcome: Outcome
    level: LinkLevel
    identity_level: LinkLevel
    evidence: str
    attach: tuple[IdentifierLink, ...] = ()
    pending: tuple[PendingLink, ...] = ()
    refused: tuple[Identifier, ...] = ()


def resolve(
    observation: IdentityObservation,
    graph: IdentityGraphView,
    *,
    limits: LinkLimits = DEFAULT_LIMITS,
    blocked: BlockedValues = DEFAULT_BLOCKED,
) -> Resolution:
    """Decide the customer, link levels, attachments and pending links for ``observation``.

    Pure: reads ``graph`` only. The rules are listed in this module's docstring.
    """
    key = observation.key
    known = graph.identity(key)
    if blocked.is_blocked_key(key):
        return Resolution(
            key=key,
            customer_id=known.customer_id if known else None,
            outcome="known" if known else "new",
            level=LinkLevel.ANONYMOUS,
            identity_level=known.level if known else LinkLevel.ANONYMOUS,
            evidence=observation.evidence + "; blocked key links nothing",
        )
    level = observation.level
    verified = _usable(observation.verified, blocked) if level is LinkLevel.VERIFIED else ()
    hint = observation.customer_hint
    if hint is not None and not graph.has_customer(hint):
        hint = None
    proposals = _Proposals(key)
    customer, outcome, attach, refused = _choose_customer(
        known, verified, hint, graph, limits, proposals
    )
    links = [IdentifierLink(v, LinkLevel.VERIFIED) for v in attach]

    # Weaker holders of identifiers this message verifies: the same person perhaps, never a join.
    for v in verified:
        for holding in graph.holders(v):
            if holding.customer_id != customer and holding.level is not LinkLevel.VERIFIED:
                proposals.add(holding.customer_id, v, holding.level)

    for claim, claim_level in _claims(observation, verified, blocked).items():
        holdings = list(graph.holders(claim))
        for holding in holdings:
            if holding.customer_id != customer:
                proposals.add(holding.customer_id, claim, weakest((claim_level, holding.level)))
        if not holdings:
            links.append(IdentifierLink(claim, claim_level))

    previous = observation.previous_key
    if previous is not None and not blocked.is_blocked_key(previous):
        before = graph.identity(previous)
        if before is not None and before.customer_id != customer:
            proposals.add(
                before.customer_id, previous.identifier, LinkLevel.INFERRED, "same_device"
            )

    # The hint verifies the customer it names, not the key: it lifts a message that lands there.
    message_level = LinkLevel.VERIFIED if hint is not None and customer == hint else level
    return Resolution(
        key=key,
        customer_id=customer,
        outcome=outcome,
        level=message_level,
        identity_level=message_level if known is None else max(known.level, message_level),
        evidence=observation.evidence,
        attach=tuple(links),
        pending=proposals.links(),
        refused=tuple(refused),
    )


class _Proposals:
    """Pending links for one resolution, deduplicated, in the order they were found."""

    def __init__(self, key: ChannelIdentityKey) -> None:
        self._key = key
        self._links: dict[PendingLink, None] = {}

    @property
    def key_identifier(self) -> Identifier:
        # What a match names when no identifier made it: the trusted upstream named the customer.
        return self._key.identifier

    def add(
        self,
        customer: str,
        via: Identifier,
        level: LinkLevel,
        reason: PendingReason | None = None,
    ) -> None:
        if reason is None:
            reason = "asserted_match" if level >= LinkLevel.ASSERTED else "inferred_match"
        self._links[PendingLink(self._key, customer, via, level, reason)] = None

    def links(self) -> tuple[PendingLink, ...]:
        return tuple(self._links)


def _choose_customer(
    known: IdentityLink | None,
    verified: tuple[Identifier, ...],
    hint: str | None,
    graph: IdentityGraphView,
    limits: LinkLimits,
    proposals: _Proposals,
) -> tuple[str | None, Outcome, list[Identifier], list[Identifier]]:
    """(customer or None for new, outcome, verified identifiers to attach, refused ones)."""
    # The verified holder of each verified identifier: at most one, since a verified attachment
    # is never made while another customer holds the identifier verified.
    owners = {v: _verified_holder(graph, v) for v in verified}
    matches = list(dict.fromkeys(c for c in (*owners.values(), hint) if c is not None))
    unheld = [v for v in verified if owners[v] is None]

    def via(customer: str) -> Identifier:
        fallback = proposals.key_identifier
        return next((v for v, c in owners.items() if c == customer), fallback)

    if known is not None:
        for other in matches:
            if other != known.customer_id:
                proposals.add(other, via(other), LinkLevel.VERIFIED, "verified_conflict")
        attach, refused = _within_limits(unheld, known.customer_id, graph, limits)
        return known.customer_id, "known", attach, refused
    if len(matches) == 1:
        target = matches[0]
        fits, over = _within_limits(unheld, target, graph, limits)
        if not over:
            return target, "joined", fits, []
        proposals.add(target, via(target), LinkLevel.VERIFIED, "merge_limit")
    else:
        for other in matches:
            proposals.add(other, via(other), LinkLevel.VERIFIED, "verified_conflict")
    attach, refused = _within_limits(unheld, None, graph, limits)
    return None, "new", attach, refused


def _usable(identifiers: Iterable[Identifier], blocked: BlockedValues) -> tuple[Identifier, ...]:
    return tuple(dict.fromkeys(i for i in identifiers if not blocked.is_blocked(i)))


def _verified_holder(graph: IdentityGraphView, identifier: Identifier) -> str | None:
    for holding in graph.holders(identifier):
        if holding.level is LinkLevel.VERIFIED:
            return holding.customer_id
    return None


def _claims(
    observation: IdentityObservation, verified: tuple[Identifier, ...], blocked: BlockedValues
) -> dict[Identifier, LinkLevel]:
    claims: dict[Identifier, LinkLevel] = {}
    for identifiers, level in (
        (observation.inferred, LinkLevel.INFERRED),
        (observation.asserted, LinkLevel.ASSERTED),
    ):
        for claim in _usable(identifiers, blocked):
            if claim not in verified:
                claims[claim] = max(level, claims.get(claim, level))
    return claims


def _within_limits(
    candidates: Iterable[Identifier],
    customer: str | None,
    graph: IdentityGraphView,
    limits: LinkLimits,
) -> tuple[list[Identifier], list[Identifier]]:
    """Split ``candidates`` into those the customer may still take and those over its limits."""
    fits: list[Identifier] = []
    over: list[Identifier] = []
    taken: Counter[str] = Counter()
    for identifier in candidates:
        cap = limits.limit(identifier.kind)
        held = graph.identifier_count(customer, identifier.kind) if customer is not None else 0
        if cap is not None and held + taken[identifier.kind] >= cap:
            over.append(identifier)
            continue
        taken[identifier.kind] += 1
        fits.append(identifier)
    return fits, over

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
6. A customer named by a trusted upstream (the call center's ``customer_id``) is authoritative
   for *this* message. When the key already belongs to another customer, the message goes to
   the named customer under its own key (``named_key``: the call's ``phone:call:<id>``), and the
   key is proposed for merge into the named customer (``named_by_call_center``: an operator
   confirms, merging the key's customer in, or rejects). With ``named_customer="merge"`` the
   key's customer is merged into the named one at once (``absorb``) when nothing verified would
   move: the key's stored level is below verified and its customer holds no verified
   identifier; otherwise it is proposed as above. A number shared by a family is why proposing
   is the default: the call center verified the caller of this call, not every earlier call.
   Without a usable ``named_key`` (a call without caller id re-posted naming someone else, or
   a call whose own key already belongs to a third customer) rule 4's ``verified_conflict``
   applies.
7. A key that is a secret of its holder (a signed web chat visitor id) and was verified by a
   one-time code its holder typed back (`identity.step_up`) speaks at its stored level; any
   other key's message speaks at what its own evidence supports (an operator's merge stores a
   key verified, yet its next message proves no more than before).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from identity.blocked import DEFAULT_BLOCKED, BlockedValues
from identity.errors import IdentityConfigError
from identity.evidence import IdentityObservation
from identity.graph import Holding, IdentityGraphView, IdentityLink
from identity.levels import LinkLevel, weakest
from identity.normalize import ChannelIdentityKey, Identifier, IdentifierKind

__all__ = [
    "DEFAULT_LIMITS",
    "IdentifierLink",
    "LinkLimits",
    "NamedCustomerPolicy",
    "Outcome",
    "PendingLink",
    "PendingReason",
    "Resolution",
    "resolve",
]

Outcome = Literal["known", "joined", "new"]
_LIMIT_KINDS: tuple[IdentifierKind, ...] = ("web_account", "phone", "email", "telegram")
PendingReason = Literal[
    "verified_conflict",
    "merge_limit",
    "asserted_match",
    "inferred_match",
    "same_device",
    "named_by_call_center",
]
# When a trusted upstream names a customer and the key sits on another one (rule 6): propose
# merging the key's customer into the named one, or merge it at once when nothing verified moves.
NamedCustomerPolicy = Literal["propose", "merge"]


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
    ``absorb`` names customers to merge into ``customer_id`` before anything else is written
    (rule 6); a pending link's ``identity_key`` may be another key than ``key`` (rule 6 proposes
    the caller id's identity while the message is stored under the call's own key).
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
    absorb: tuple[str, ...] = ()


def resolve(
    observation: IdentityObservation,
    graph: IdentityGraphView,
    *,
    limits: LinkLimits = DEFAULT_LIMITS,
    blocked: BlockedValues = DEFAULT_BLOCKED,
    named_customer: NamedCustomerPolicy = "propose",
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
    if observation.secret_key and known is not None and known.stepped_up:
        level = max(level, known.level)  # rule 7
    verified = _usable(observation.verified, blocked) if level is LinkLevel.VERIFIED else ()
    hint = observation.customer_hint
    if hint is not None and not graph.has_customer(hint):
        hint = None
    if hint is not None and known is not None and known.customer_id != hint:
        named = _named_elsewhere(
            observation, known, hint, graph, limits=limits, blocked=blocked, policy=named_customer
        )
        if named is not None:
            return named
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


def _named_elsewhere(
    observation: IdentityObservation,
    known: IdentityLink,
    hint: str,
    graph: IdentityGraphView,
    *,
    limits: LinkLimits,
    blocked: BlockedValues,
    policy: NamedCustomerPolicy,
) -> Resolution | None:
    """Rule 6: the upstream named ``hint`` while the key sits on ``known.customer_id``.
    ``None`` when no key of the message can carry it to ``hint`` (rule 4 then applies)."""
    other = known.customer_id
    if policy == "merge" and _nothing_verified(known, other, graph):
        merged = resolve(
            observation, _AfterMerge(graph, other, hint), limits=limits, blocked=blocked
        )
        return replace(
            merged,
            evidence=merged.evidence + "; the caller id's unverified customer merged in",
            absorb=(other, *merged.absorb),
        )
    if observation.named_key is None:
        return None
    stored = graph.identity(observation.named_key)
    if stored is not None and stored.customer_id != hint:
        return None  # the call's own key is someone else's too: neither carries it to ``hint``
    caller = observation.key
    own = resolve(
        replace(
            observation,
            key=observation.named_key,
            # The caller id is proposed as a whole below; as a claim it would point backwards.
            inferred=tuple(i for i in observation.inferred if i != caller.identifier),
            named_key=None,
            evidence=observation.evidence + f"; caller id {caller} is another customer's",
        ),
        graph,
        limits=limits,
        blocked=blocked,
    )
    link = PendingLink(caller, hint, caller.identifier, LinkLevel.VERIFIED, "named_by_call_center")
    return replace(own, pending=(link, *(p for p in own.pending if p != link)))


def _nothing_verified(known: IdentityLink, customer: str, graph: IdentityGraphView) -> bool:
    """Whether merging ``customer`` (which owns the key ``known``) would move nothing
    verified: the key is below verified and the customer holds no verified identifier."""
    if known.level is LinkLevel.VERIFIED:
        return False
    return all(graph.identifier_count(customer, kind) == 0 for kind in _LIMIT_KINDS)


class _AfterMerge:
    """``graph`` as it reads once ``source`` is merged into ``target``."""

    def __init__(self, graph: IdentityGraphView, source: str, target: str) -> None:
        self._graph = graph
        self._source = source
        self._target = target

    def _owner(self, customer: str) -> str:
        return self._target if customer == self._source else customer

    def identity(self, key: ChannelIdentityKey) -> IdentityLink | None:
        link = self._graph.identity(key)
        return None if link is None else replace(link, customer_id=self._owner(link.customer_id))

    def holders(self, identifier: Identifier) -> Iterable[Holding]:
        strongest: dict[str, LinkLevel] = {}
        for holding in self._graph.holders(identifier):
            owner = self._owner(holding.customer_id)
            strongest[owner] = max(holding.level, strongest.get(owner, holding.level))
        return tuple(Holding(c, level) for c, level in sorted(strongest.items()))

    def identifier_count(self, customer_id: str, kind: IdentifierKind) -> int:
        if customer_id == self._source:
            return 0
        count = self._graph.identifier_count(customer_id, kind)
        if customer_id == self._target:
            count += self._graph.identifier_count(self._source, kind)
        return count

    def has_customer(self, customer_id: str) -> bool:
        return customer_id != self._source and self._graph.has_customer(customer_id)


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

"""The identity step of the pipeline: read the graph rows linking needs, apply the decision.

`identity/` decides (pure); this module fetches exactly the rows `identity.lookups_for` names,
builds the `GraphSnapshot`, calls `identity.resolve` and writes the result: new customer,
channel identity (with its level and evidence), identifiers and pending links.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.customers.operator_actions import merge_customers
from gateway.storage.errors import IdentityRace
from gateway.storage.records import ChannelIdentityRecord, IdentifierRecord
from gateway.storage.repositories import customers, pending_links
from gateway.tenants import TenantSettings
from identity import (
    DEFAULT_BLOCKED,
    DEFAULT_LIMITS,
    BlockedValues,
    ChannelIdentityKey,
    Evidence,
    GraphSnapshot,
    Identifier,
    IdentifierKind,
    IdentityObservation,
    LinkLevel,
    LinkLimits,
    NamedCustomerPolicy,
    PendingLink,
    Resolution,
    ScopePolicy,
    lookups_for,
    observe,
    resolve,
)
from identity.stated import stated_values
from identity.step_up import STEP_UP_EVIDENCE

DEFAULT_POLICY = ScopePolicy.default()
CALL_CENTER = "call-center"  # the actor of merges the call center's verification makes
_K = TypeVar("_K")
_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class IdentityRules:
    """A tenant's identity data: scope policy, merge-protection limits, blocked values, and
    what a customer named by the call center does to the caller id's other customer."""

    policy: ScopePolicy = DEFAULT_POLICY
    limits: LinkLimits = DEFAULT_LIMITS
    blocked: BlockedValues = DEFAULT_BLOCKED
    named_customer: NamedCustomerPolicy = "propose"


def rules_for(tenant: TenantSettings, region: str | None) -> IdentityRules:
    """Read the tenant's identity settings; raises `IdentityConfigError` naming the problem."""
    return IdentityRules(
        policy=ScopePolicy.from_mapping(tenant.scope_policy)
        if tenant.scope_policy
        else DEFAULT_POLICY,
        limits=LinkLimits.from_mapping(tenant.link_limits)
        if tenant.link_limits
        else DEFAULT_LIMITS,
        blocked=BlockedValues.from_mapping(tenant.blocked_values, region=region)
        if tenant.blocked_values
        else DEFAULT_BLOCKED,
        named_customer=tenant.call_center_customer,
    )


@dataclass(frozen=True, slots=True)
class ResolvedIdentity:
    """Who wrote, how sure we are for this message, and which fact scopes it may see."""

    customer_id: str
    identity_id: str
    key: ChannelIdentityKey
    level: LinkLevel
    allowed_scopes: frozenset[str]
    outcome: str
    pending_links: int
    own_facts_only: bool = False


async def snapshot_for(
    session: AsyncSession,
    observation: IdentityObservation,
    found: dict[ChannelIdentityKey, ChannelIdentityRecord] | None = None,
) -> GraphSnapshot:
    """The rows `resolve` will ask about for this observation, read in one transaction.
    The identity rows read are also put in `found`, so writing the result need not read them
    again."""
    lookups = lookups_for(observation)
    identity_rows: list[tuple[ChannelIdentityKey, str, LinkLevel]] = []
    read: dict[ChannelIdentityKey, ChannelIdentityRecord] = {}
    for key in lookups.keys:
        row = await customers.find_identity(session, key.channel, str(key))
        if row is not None:
            identity_rows.append((key, row.customer_id, LinkLevel.parse(row.link_level)))
            read[key] = row
    if found is not None:
        found.update(read)
    holding_rows: list[tuple[Identifier, str, LinkLevel]] = []
    for identifier in lookups.identifiers:
        for owner in await customers.owners_of_identifier(
            session, identifier.kind, identifier.value
        ):
            holding_rows.append((identifier, owner.customer_id, LinkLevel.parse(owner.link_level)))
    mentioned = {customer for _, customer, _ in identity_rows}
    mentioned |= {customer for _, customer, _ in holding_rows}
    existing = await customers.unmerged_customers(session, lookups.customer_ids)
    mentioned |= existing
    return GraphSnapshot.from_rows(
        identities=identity_rows,
        holdings=holding_rows,
        counts=await _verified_counts(session, mentioned),
        customers=existing,
        stepped_up=stepped_up_keys(read),
    )


def stepped_up_keys(
    rows: Mapping[ChannelIdentityKey, ChannelIdentityRecord],
) -> list[ChannelIdentityKey]:
    """The keys whose identity a one-time code verified (`identity.step_up`)."""
    return [key for key, row in rows.items() if STEP_UP_EVIDENCE in row.evidence]


@dataclass
class GraphRows:
    """The graph rows several observations need, read at once: identities of their keys,
    holders of their identifiers, which named customers exist, and the verified counts of every
    customer those rows mention. `forget` marks rows a write touched; `snapshot` then declines
    an observation that names one."""

    identities: dict[ChannelIdentityKey, ChannelIdentityRecord]
    holders: dict[Identifier, list[IdentifierRecord]]
    existing: set[str]
    counts: dict[str, list[tuple[IdentifierKind, int]]]
    stale_keys: set[ChannelIdentityKey] = field(default_factory=set)
    stale_identifiers: set[Identifier] = field(default_factory=set)
    stale_customers: set[str] = field(default_factory=set)

    @classmethod
    async def read(
        cls, session: AsyncSession, observations: Sequence[IdentityObservation]
    ) -> GraphRows:
        lookups = [lookups_for(observation) for observation in observations]
        keys = {key for lookup in lookups for key in lookup.keys}
        wanted = {identifier for lookup in lookups for identifier in lookup.identifiers}
        named: dict[tuple[str, str], ChannelIdentityKey] = {(k.channel, str(k)): k for k in keys}
        identities = {
            named[stored]: row
            for stored, row in (await customers.find_identities(session, named)).items()
        }
        values: dict[tuple[str, str], Identifier] = {(i.kind, i.value): i for i in wanted}
        holders = {
            values[held]: rows
            for held, rows in (await customers.owners_of_identifiers(session, values)).items()
        }
        existing = await customers.unmerged_customers(
            session, {c for lookup in lookups for c in lookup.customer_ids}
        )
        mentioned = {row.customer_id for row in identities.values()}
        mentioned |= {row.customer_id for rows in holders.values() for row in rows}
        counts: dict[str, list[tuple[IdentifierKind, int]]] = {}
        for customer, kind, count in await _verified_counts(session, mentioned | existing):
            counts.setdefault(customer, []).append((kind, count))
        return cls(identities, holders, existing, counts)

    def snapshot(
        self,
        observation: IdentityObservation,
        found: dict[ChannelIdentityKey, ChannelIdentityRecord],
    ) -> GraphSnapshot | None:
        """What `snapshot_for` would read for `observation` (its identity rows put in `found`),
        or None when a write since `read` may have changed any of it."""
        lookups = lookups_for(observation)
        if self.stale_keys.intersection(lookups.keys) or self.stale_identifiers.intersection(
            lookups.identifiers
        ):
            return None
        identity_rows = [
            (key, row.customer_id, LinkLevel.parse(row.link_level))
            for key in lookups.keys
            if (row := self.identities.get(key)) is not None
        ]
        holding_rows = [
            (identifier, owner.customer_id, LinkLevel.parse(owner.link_level))
            for identifier in lookups.identifiers
            for owner in self.holders.get(identifier, ())
        ]
        existing = self.existing.intersection(lookups.customer_ids)
        mentioned = {customer for _, customer, _ in identity_rows}
        mentioned |= {customer for _, customer, _ in holding_rows}
        mentioned |= existing
        if self.stale_customers.intersection(mentioned | set(lookups.customer_ids)):
            return None
        for key in lookups.keys:
            if key in self.identities:
                found[key] = self.identities[key]
        return GraphSnapshot.from_rows(
            identities=identity_rows,
            holdings=holding_rows,
            counts=[
                (customer, kind, count)
                for customer in sorted(mentioned)
                for kind, count in self.counts.get(customer, ())
            ],
            customers=existing,
            stepped_up=stepped_up_keys(self.identities),
        )

    async def refresh(self, session: AsyncSession, observation: IdentityObservation) -> None:
        """Read again every row `observation` names (after writes made some stale)."""
        lookups = lookups_for(observation)
        fresh = await GraphRows.read(session, [observation])
        for key in lookups.keys:
            _put(self.identities, key, fresh.identities.get(key))
        for identifier in lookups.identifiers:
            _put(self.holders, identifier, fresh.holders.get(identifier))
        self.existing.difference_update(lookups.customer_ids)
        self.existing.update(fresh.existing)
        mentioned = {row.customer_id for row in fresh.identities.values()}
        mentioned |= {row.customer_id for rows in fresh.holders.values() for row in rows}
        for customer in mentioned | fresh.existing:
            _put(self.counts, customer, fresh.counts.get(customer))
        self.stale_keys.difference_update(lookups.keys)
        self.stale_identifiers.difference_update(lookups.identifiers)
        self.stale_customers.difference_update(mentioned | set(lookups.customer_ids))

    def forget(
        self, observation: IdentityObservation, snapshot: GraphSnapshot, customer_id: str
    ) -> None:
        """A resolution of `observation` (read from `snapshot`) wrote for `customer_id`: later
        observations naming its keys, identifiers or any customer it saw read afresh."""
        lookups = lookups_for(observation)
        self.stale_keys.update(lookups.keys)
        self.stale_identifiers.update(lookups.identifiers)
        self.stale_customers.update(snapshot.customers)
        self.stale_customers.add(customer_id)


def _put(rows: dict[_K, _V], key: _K, value: _V | None) -> None:
    """Set or (None) remove ``key``."""
    if value is None:
        rows.pop(key, None)
    else:
        rows[key] = value


async def _verified_counts(
    session: AsyncSession, customer_ids: set[str]
) -> list[tuple[str, IdentifierKind, int]]:
    counts = await customers.identifier_counts(
        session, customer_ids, link_level=LinkLevel.VERIFIED.value
    )
    return [(customer, cast(IdentifierKind, kind), count) for customer, kind, count in counts]


async def resolve_identity(
    session: AsyncSession,
    observation: IdentityObservation,
    rules: IdentityRules | None = None,
) -> ResolvedIdentity:
    """Resolve and persist one observation. The caller owns the transaction."""
    rules = rules or IdentityRules()
    found: dict[ChannelIdentityKey, ChannelIdentityRecord] = {}
    snapshot = await snapshot_for(session, observation, found)
    resolved, _ = await _resolve_and_apply(session, observation, snapshot, found, rules)
    return resolved


async def resolve_identities(
    session: AsyncSession, observations: Sequence[tuple[IdentityObservation, IdentityRules]]
) -> list[ResolvedIdentity]:
    """`resolve_identity` for several observations, in order, in the caller's transaction.

    The graph rows all of them need are read together in four statements (`GraphRows`); each
    observation is then resolved on the rows it names, exactly as alone. A resolution that
    writes (a new customer or identity, a level, an identifier, a pending link) makes the rows
    it touched stale: a later observation naming any of them reads those rows again first, so
    it sees the writes before it, as it would one message at a time."""
    rows = await GraphRows.read(session, [observation for observation, _ in observations])
    resolved: list[ResolvedIdentity] = []
    for observation, rules in observations:
        found: dict[ChannelIdentityKey, ChannelIdentityRecord] = {}
        snapshot = rows.snapshot(observation, found)
        if snapshot is None:
            await rows.refresh(session, observation)
            snapshot = rows.snapshot(observation, found)
            if snapshot is None:  # cannot happen: everything it names was just read
                snapshot = await snapshot_for(session, observation, found)
        one, wrote = await _resolve_and_apply(session, observation, snapshot, found, rules)
        if wrote:
            rows.forget(observation, snapshot, one.customer_id)
        resolved.append(one)
    return resolved


async def _resolve_and_apply(
    session: AsyncSession,
    observation: IdentityObservation,
    snapshot: GraphSnapshot,
    found: dict[ChannelIdentityKey, ChannelIdentityRecord],
    rules: IdentityRules,
) -> tuple[ResolvedIdentity, bool]:
    """The resolution on `snapshot`, written; and whether writing it changed any row."""
    policy = rules.policy
    resolution = resolve(
        observation,
        snapshot,
        limits=rules.limits,
        blocked=rules.blocked,
        named_customer=rules.named_customer,
    )
    stored = found.get(resolution.key)
    wrote = (
        resolution.customer_id is None
        or stored is None
        or stored.link_level != resolution.identity_level.value
        or bool(resolution.attach)
        or bool(resolution.pending)
        or bool(resolution.absorb)
    )
    customer_id, identity_id = await apply_resolution(session, resolution, stored=stored)
    resolved = ResolvedIdentity(
        customer_id=customer_id,
        identity_id=identity_id,
        key=resolution.key,
        level=resolution.level,
        allowed_scopes=policy.allowed_scopes(resolution.level, resolution.key.channel),
        outcome=resolution.outcome,
        pending_links=len(resolution.pending),
        own_facts_only=resolution.level in policy.own_facts_only,
    )
    return resolved, wrote


async def identify(
    session: AsyncSession,
    evidence: Evidence,
    *,
    text: str,
    tenant: TenantSettings,
    region: str,
) -> ResolvedIdentity:
    """Observe the evidence (plus phones and e-mails stated in `text`, as asserted claims)
    under the tenant's identity rules and resolve it. Raises `InvalidIdentifier` when the
    channel's own id cannot be read."""
    rules = rules_for(tenant, region)
    observation = observe(
        evidence,
        stated=stated_values(text, region=region),
        region=region,
        blocked=rules.blocked,
    )
    return await resolve_identity(session, observation, rules=rules)


async def apply_resolution(
    session: AsyncSession,
    resolution: Resolution,
    *,
    stored: ChannelIdentityRecord | None = None,
) -> tuple[str, str]:
    """Write a resolution: returns (customer id, channel identity id). `stored` is the
    resolution's identity row when the caller read it in this transaction already."""
    customer_id = resolution.customer_id
    key = resolution.key
    if stored is None:
        stored = await customers.find_identity(session, key.channel, str(key))
    new_customer = customer_id is None
    if customer_id is None:
        if stored is not None:
            # Resolved as a stranger, but the identity exists now (a concurrent first message
            # committed it after our snapshot): a new customer here would split the sender.
            raise IdentityRace(f"identity {key} appeared concurrently")
        customer_id = (await customers.create_customer(session)).id
    for absorbed in resolution.absorb:
        # The tenant lets the call center's verification merge the caller id's customer.
        await merge_customers(
            session, absorbed, customer_id, actor=CALL_CENTER, reason=resolution.evidence
        )
    evidence = {"description": resolution.evidence, "level": resolution.identity_level.value}
    if stored is None:
        stored = await customers.create_identity(
            session,
            customer_id=customer_id,
            channel=key.channel,
            external_id=str(key),
            link_level=resolution.identity_level.value,
            evidence=evidence,
        )
    elif stored.link_level != resolution.identity_level.value:
        stored = await customers.update_identity(
            session, stored.id, link_level=resolution.identity_level.value, evidence=evidence
        )
    # A customer created here holds no identifier yet (nothing was absorbed into it): each of
    # its identifiers is inserted once, without a look for an existing row.
    fresh = new_customer and not resolution.absorb
    attached: set[tuple[str, str]] = set()
    for link in resolution.attach:
        pair = (link.identifier.kind, link.identifier.value)
        await customers.add_identifier(
            session,
            customer_id=customer_id,
            kind=link.identifier.kind,
            value=link.identifier.value,
            link_level=link.level.value,
            source_identity_id=stored.id,
            new_customer=fresh and pair not in attached,
        )
        attached.add(pair)
    for pending in resolution.pending:
        proposed: ChannelIdentityRecord | None = stored
        if pending.identity_key != key:  # the caller id, when the call went elsewhere
            proposed = await customers.find_identity(
                session, pending.identity_key.channel, str(pending.identity_key)
            )
        if proposed is not None:
            await _propose(session, proposed.id, pending)
    return customer_id, stored.id


async def _propose(session: AsyncSession, identity_id: str, pending: PendingLink) -> None:
    await pending_links.propose_link(
        session,
        identity_id=identity_id,
        target_customer_id=pending.candidate_customer,
        identifier_kind=pending.via.kind,
        identifier_value=pending.via.value,
        claimed_level=pending.level.value,
        reason=pending.reason,
    )


async def identity_key_of(session: AsyncSession, identity_id: str) -> ChannelIdentityKey | None:
    identity = await customers.find_identity_by_id(session, identity_id)
    return ChannelIdentityKey.parse(identity.external_id) if identity else None

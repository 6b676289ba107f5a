"""An in-memory identity graph: the reference for applying resolutions and operator actions.

It implements `IdentityGraphView` and shows exactly what storage must do with a `Resolution`
and an `OwnershipPlan`: which rows to create or update, how pending links follow merges and how
an operator confirmation raises a link. Useful for tests and demos; it keeps everything in
process memory and is not safe to share across threads.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from identity.errors import OwnershipConflict
from identity.graph import Holding, IdentityLink
from identity.levels import LinkLevel
from identity.normalize import ChannelIdentityKey, Identifier, IdentifierKind
from identity.ownership import (
    IDENTITY_RECORD,
    AuditEntry,
    OwnedRecord,
    OwnershipPlan,
    apply_plan,
    identity_keys_of,
    plan_merge,
    plan_split,
)
from identity.resolution import PendingLink, Resolution

__all__ = ["IDENTIFIER_RECORD", "MemoryGraph"]

IDENTIFIER_RECORD = "identifier"


class MemoryGraph:
    """Customers, channel identities, identifiers, other owned records and pending links."""

    def __init__(self) -> None:
        self._records: dict[str, OwnedRecord] = {}
        self._identity_levels: dict[ChannelIdentityKey, LinkLevel] = {}
        self._identifiers: dict[str, tuple[Identifier, LinkLevel]] = {}
        self._customers: set[str] = set()
        self._pending: list[PendingLink] = []
        self._audit: list[AuditEntry] = []
        self._ids = itertools.count(1)

    # IdentityGraphView

    def identity(self, key: ChannelIdentityKey) -> IdentityLink | None:
        record = self._records.get(_identity_id(key))
        if record is None:
            return None
        return IdentityLink(record.customer_id, self._identity_levels[key])

    def holders(self, identifier: Identifier) -> Iterable[Holding]:
        strongest: dict[str, LinkLevel] = {}
        for record_id, (held, level) in self._identifiers.items():
            if held == identifier:
                customer = self._records[record_id].customer_id
                strongest[customer] = max(level, strongest.get(customer, level))
        return tuple(Holding(c, level) for c, level in sorted(strongest.items()))

    def identifier_count(self, customer_id: str, kind: IdentifierKind) -> int:
        return len(
            {
                identifier
                for record_id, (identifier, level) in self._identifiers.items()
                if identifier.kind == kind
                and level is LinkLevel.VERIFIED
                and self._records[record_id].customer_id == customer_id
            }
        )

    def has_customer(self, customer_id: str) -> bool:
        return customer_id in self._customers

    # Writes

    def new_customer(self) -> str:
        """Create an empty customer and return its id."""
        customer = f"cust-{next(self._ids)}"
        self._customers.add(customer)
        return customer

    def apply(self, resolution: Resolution, *, actor: str = "linking") -> str:
        """Store ``resolution``; returns the customer id the message belongs to. The customers
        it absorbs are merged first, audited under ``actor``."""
        customer = resolution.customer_id
        if customer is None:
            customer = self.new_customer()
        elif customer not in self._customers:
            raise OwnershipConflict("resolution names an unknown customer")
        for source in resolution.absorb:
            self.merge(source, customer, actor=actor, reason=resolution.evidence)
        key = resolution.key
        current = self.identity(key)
        if current is None:
            record = OwnedRecord(IDENTITY_RECORD, _identity_id(key), customer, key)
            self._records[record.record_id] = record
        elif current.customer_id != customer:
            raise OwnershipConflict("the channel identity moved since it was resolved")
        self._identity_levels[key] = resolution.identity_level
        for link in resolution.attach:
            self._attach(customer, key, link.identifier, link.level)
        for pending in resolution.pending:
            # The proposed identity is usually the message's own, but may be another (rule 6).
            owner = self.identity(pending.identity_key)
            proposes = owner is not None and owner.customer_id != pending.candidate_customer
            if proposes and pending not in self._pending:
                self._pending.append(pending)
        return customer

    def add_record(self, kind: str, source: ChannelIdentityKey) -> str:
        """Store a message/fact/episode learned from ``source``; returns its record id."""
        owner = self.identity(source)
        if owner is None:
            raise OwnershipConflict("records must come from a known channel identity")
        record = OwnedRecord(kind, f"{kind}-{next(self._ids)}", owner.customer_id, source)
        self._records[record.record_id] = record
        return record.record_id

    def merge(self, source: str, target: str, *, actor: str, reason: str) -> AuditEntry:
        """Operator merge of ``source`` into ``target``."""
        if target not in self._customers:
            raise OwnershipConflict("unknown target customer")
        plan = plan_merge(source, target, self._records.values(), actor=actor, reason=reason)
        self._apply(plan)
        self._customers.discard(source)
        # Pending links follow the customer they pointed at; those now satisfied disappear.
        retargeted = []
        for link in self._pending:
            if link.candidate_customer == source:
                link = PendingLink(link.identity_key, target, link.via, link.level, link.reason)
            owner = self.identity(link.identity_key)
            if owner is not None and owner.customer_id != link.candidate_customer:
                if link not in retargeted:
                    retargeted.append(link)
        self._pending = retargeted
        return plan.audit

    def split(
        self,
        customer: str,
        keys: Iterable[ChannelIdentityKey],
        *,
        actor: str,
        reason: str,
        new_customer_id: str | None = None,
    ) -> AuditEntry:
        """Operator split of ``keys`` (and everything they brought) off ``customer``."""
        new_id = new_customer_id or f"cust-{next(self._ids)}"
        if new_id in self._customers:
            raise OwnershipConflict("the split must go to a new customer")
        plan = plan_split(
            customer, keys, new_id, self._records.values(), actor=actor, reason=reason
        )
        self._apply(plan)
        self._customers.add(new_id)
        return plan.audit

    def confirm(self, link: PendingLink, *, actor: str, reason: str) -> AuditEntry | None:
        """Operator confirmation: merge the identity's customer into the candidate and mark the
        identity verified (operator confirmation is verifying evidence). Returns the merge
        audit, or ``None`` if already linked."""
        if link not in self._pending:
            raise OwnershipConflict("no such pending link")
        owner = self.identity(link.identity_key)
        if owner is None:
            raise OwnershipConflict("the pending link's identity is gone")
        audit = None
        if owner.customer_id != link.candidate_customer:
            audit = self.merge(
                owner.customer_id, link.candidate_customer, actor=actor, reason=reason
            )
        self._pending = [p for p in self._pending if p != link]
        self._identity_levels[link.identity_key] = LinkLevel.VERIFIED
        return audit

    def reject(self, link: PendingLink) -> None:
        """Operator rejection: forget the proposal."""
        self._pending = [p for p in self._pending if p != link]

    # Reads

    @property
    def audit_log(self) -> tuple[AuditEntry, ...]:
        return tuple(self._audit)

    @property
    def pending(self) -> tuple[PendingLink, ...]:
        return tuple(self._pending)

    @property
    def customers(self) -> frozenset[str]:
        return frozenset(self._customers)

    def ownership(self) -> dict[str, str]:
        """record id → owning customer id, for every record."""
        return {record_id: r.customer_id for record_id, r in self._records.items()}

    def records(self) -> tuple[OwnedRecord, ...]:
        return tuple(self._records.values())

    def identity_keys(self, customer_id: str) -> tuple[ChannelIdentityKey, ...]:
        return identity_keys_of(self._records.values(), customer_id)

    def identifiers(self, customer_id: str) -> dict[Identifier, LinkLevel]:
        """The identifiers ``customer_id`` holds, each at its strongest level."""
        held: dict[Identifier, LinkLevel] = {}
        for record_id, (identifier, level) in self._identifiers.items():
            if self._records[record_id].customer_id == customer_id:
                held[identifier] = max(level, held.get(identifier, level))
        return held

    def _attach(
        self, customer: str, source: ChannelIdentityKey, identifier: Identifier, level: LinkLevel
    ) -> None:
        for record_id, (held, held_level) in self._identifiers.items():
            record = self._records[record_id]
            if held == identifier and record.source == source and record.customer_id == customer:
                self._identifiers[record_id] = (held, max(level, held_level))
                return
        record = OwnedRecord(IDENTIFIER_RECORD, f"identifier-{next(self._ids)}", customer, source)
        self._records[record.record_id] = record
        self._identifiers[record.record_id] = (identifier, level)

    def _apply(self, plan: OwnershipPlan) -> None:
        moved = {m.record_id for m in plan.moves}
        updated = apply_plan([self._records[record_id] for record_id in moved], plan)
        for record in updated:
            self._records[record.record_id] = record
        self._audit.append(plan.audit)


def _identity_id(key: ChannelIdentityKey) -> str:
    return f"identity:{key}"

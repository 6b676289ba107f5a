"""Operator merge and split, planned as pure data with an audit entry.

Every owned record — channel identity, identifier, episode, message, fact, summary — carries the
channel identity it came from (``source``; an identity's source is its own key). That makes the
two operations exact inverses:

* `plan_merge` moves every record of the source customer to the target customer;
* `plan_split` moves every record whose source is one of the split-off identities to a new
  customer, so splitting the identities a merge brought in restores the previous ownership.

The gateway applies the ``moves`` (``UPDATE … SET customer_id``) and persists the ``audit``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from identity.errors import OwnershipConflict
from identity.normalize import ChannelIdentityKey

__all__ = [
    "IDENTITY_RECORD",
    "AuditEntry",
    "Move",
    "OwnedRecord",
    "OwnershipPlan",
    "apply_plan",
    "identity_keys_of",
    "plan_merge",
    "plan_split",
]

# The kind of the record that stands for a channel identity itself.
IDENTITY_RECORD = "identity"

AuditAction = Literal["merge", "split"]


@dataclass(frozen=True, slots=True, order=True)
class OwnedRecord:
    """A record owned by a customer; ``kind`` is e.g. identity, identifier, message, fact."""

    kind: str
    record_id: str
    customer_id: str
    source: ChannelIdentityKey


@dataclass(frozen=True, slots=True)
class Move:
    """Reassign one record."""

    kind: str
    record_id: str
    from_customer: str
    to_customer: str


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """What an operator did, to whom, why, and exactly which records moved."""

    action: AuditAction
    actor: str
    reason: str
    from_customer: str
    to_customer: str
    identity_keys: tuple[ChannelIdentityKey, ...]
    moved: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class OwnershipPlan:
    """The moves to apply, all or nothing, and the audit entry to store with them."""

    moves: tuple[Move, ...]
    audit: AuditEntry


def identity_keys_of(
    records: Iterable[OwnedRecord], customer_id: str
) -> tuple[ChannelIdentityKey, ...]:
    """The channel identities ``customer_id`` owns, sorted."""
    return tuple(
        sorted(
            r.source for r in records if r.kind == IDENTITY_RECORD and r.customer_id == customer_id
        )
    )


def plan_merge(
    source_customer: str,
    target_customer: str,
    records: Iterable[OwnedRecord],
    *,
    actor: str,
    reason: str,
) -> OwnershipPlan:
    """Move everything ``source_customer`` owns to ``target_customer``.

    ``records`` must include every record of the source customer (others are ignored). Raises
    `OwnershipConflict` when both ids are the same or the source owns no channel identity.
    """
    if source_customer == target_customer:
        raise OwnershipConflict("cannot merge a customer into itself")
    owned = sorted(r for r in records if r.customer_id == source_customer)
    keys = tuple(sorted(r.source for r in owned if r.kind == IDENTITY_RECORD))
    if not keys:
        raise OwnershipConflict("the source customer owns no channel identity")
    return _plan("merge", owned, source_customer, target_customer, keys, actor, reason)


def plan_split(
    customer_id: str,
    identity_keys: Iterable[ChannelIdentityKey],
    new_customer_id: str,
    records: Iterable[OwnedRecord],
    *,
    actor: str,
    reason: str,
) -> OwnershipPlan:
    """Move the given identities, and every record they are the source of, to a new customer.

    Raises `OwnershipConflict` when a key is not an identity of ``customer_id``, when no identity
    would remain, or when ``new_customer_id`` already owns records.
    """
    split = frozenset(identity_keys)
    all_records = list(records)
    owned = sorted(r for r in all_records if r.customer_id == customer_id)
    keys = {r.source for r in owned if r.kind == IDENTITY_RECORD}
    if not split:
        raise OwnershipConflict("nothing to split")
    if not split <= keys:
        raise OwnershipConflict("a split identity does not belong to this customer")
    if split == keys:
        raise OwnershipConflict("a split must leave the customer at least one identity")
    if new_customer_id == customer_id or any(r.customer_id == new_customer_id for r in all_records):
        raise OwnershipConflict("the split must go to a new customer")
    moving = [r for r in owned if r.source in split]
    return _plan("split", moving, customer_id, new_customer_id, tuple(sorted(split)), actor, reason)


def apply_plan(records: Iterable[OwnedRecord], plan: OwnershipPlan) -> tuple[OwnedRecord, ...]:
    """``records`` with the plan's moves applied (for in-memory stores and tests)."""
    moves = {(m.kind, m.record_id): m for m in plan.moves}
    out: list[OwnedRecord] = []
    for record in records:
        move = moves.get((record.kind, record.record_id))
        if move is None:
            out.append(record)
        elif record.customer_id != move.from_customer:
            raise OwnershipConflict("ownership changed since the plan was made")
        else:
            out.append(replace(record, customer_id=move.to_customer))
    return tuple(out)


def _plan(
    action: AuditAction,
    records: list[OwnedRecord],
    from_customer: str,
    to_customer: str,
    keys: tuple[ChannelIdentityKey, ...],
    actor: str,
    reason: str,
) -> OwnershipPlan:
    moves = tuple(Move(r.kind, r.record_id, from_customer, to_customer) for r in records)
    audit = AuditEntry(
        action=action,
        actor=actor,
        reason=reason,
        from_customer=from_customer,
        to_customer=to_customer,
        identity_keys=keys,
        moved=tuple((m.kind, m.record_id) for m in moves),
    )
    return OwnershipPlan(moves=moves, audit=audit)

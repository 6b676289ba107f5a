"""Customers, their channel identities and known identifiers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from sqlalchemy import CursorResult, bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.errors import RecordNotFound, require_customer
from gateway.storage.models import ChannelIdentity, Customer, CustomerIdentifier
from gateway.storage.records import ChannelIdentityRecord, CustomerRecord, IdentifierRecord
from gateway.storage.repositories.bound_lists import (
    ByDialect,
    as_arrays,
    one_of,
    rows_in,
    rows_params,
    values_in,
)
from gateway.storage.repositories.identity_names import PROFILE_NAME_KEY
from gateway.storage.repositories.tables import CUSTOMERS, IDENTIFIERS, IDENTITIES, AnyRow

# Plain rows of the table, not ORM objects: every message reads its identity twice.
_FIND_IDENTITY = select(IDENTITIES).where(
    IDENTITIES.c.channel == bindparam("channel"),
    IDENTITIES.c.external_id == bindparam("external_id"),
)
_INSERT_CUSTOMER = CUSTOMERS.insert().returning(*CUSTOMERS.c)
_INSERT_IDENTITY = IDENTITIES.insert().returning(*IDENTITIES.c)
_INSERT_IDENTIFIER = IDENTIFIERS.insert().returning(*IDENTIFIERS.c)
# Plain rows: every turn that offers actions reads its customer's identifiers.
_IDENTIFIERS_OF = (
    select(IDENTIFIERS)
    .where(IDENTIFIERS.c.customer_id == bindparam("customer_id"))
    .order_by(IDENTIFIERS.c.id)
)
_IDENTITY_BY_ID = select(IDENTITIES).where(IDENTITIES.c.id == bindparam("identity_id"))
_FIND_IDENTITIES = ByDialect.build(
    lambda arrays: select(IDENTITIES).where(
        rows_in((IDENTITIES.c.channel, IDENTITIES.c.external_id), "keys", arrays=arrays)
    )
)
_OWNERS_OF_MANY = ByDialect.build(
    lambda arrays: (
        select(IDENTIFIERS)
        .where(rows_in((IDENTIFIERS.c.kind, IDENTIFIERS.c.value), "identifiers", arrays=arrays))
        .order_by(IDENTIFIERS.c.id)
    )
)
_OWNERS = (
    select(CustomerIdentifier)
    .where(
        CustomerIdentifier.kind == bindparam("kind"),
        CustomerIdentifier.value == bindparam("value"),
    )
    .order_by(CustomerIdentifier.id)
)
_IDENTIFIER_COUNTS = ByDialect.build(
    lambda arrays: (
        select(
            IDENTIFIERS.c.customer_id,
            IDENTIFIERS.c.kind,
            func.count(func.distinct(IDENTIFIERS.c.value)),
        )
        .where(
            one_of(IDENTIFIERS.c.customer_id, "customers", arrays=arrays),
            IDENTIFIERS.c.link_level == bindparam("link_level"),
        )
        .group_by(IDENTIFIERS.c.customer_id, IDENTIFIERS.c.kind)
    )
)


def customer_record(row: Customer | AnyRow) -> CustomerRecord:
    return CustomerRecord(
        id=row.id,
        display_name=row.display_name,
        locale=row.locale,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def identity_record(row: ChannelIdentity | AnyRow) -> ChannelIdentityRecord:
    """From an ORM row, or a Core row of the identities table (the same attribute names)."""
    return ChannelIdentityRecord(
        id=row.id,
        channel=row.channel,
        external_id=row.external_id,
        customer_id=row.customer_id,
        link_level=row.link_level,
        evidence=dict(row.evidence or {}),
        created_at=row.created_at,
    )


def identifier_record(row: CustomerIdentifier | AnyRow) -> IdentifierRecord:
    return IdentifierRecord(
        id=row.id,
        customer_id=row.customer_id,
        kind=row.kind,
        value=row.value,
        link_level=row.link_level,
        source_identity_id=row.source_identity_id,
    )


async def create_customer(
    session: AsyncSession, *, display_name: str | None = None, locale: str | None = None
) -> CustomerRecord:
    # A Core insert: every first message creates one, and a flush of the session's unit of
    # work costs several times the statement.
    row = (
        await session.execute(_INSERT_CUSTOMER, {"display_name": display_name, "locale": locale})
    ).one()
    return customer_record(row)


async def get_customer(session: AsyncSession, customer_id: str) -> CustomerRecord:
    row = await session.get(Customer, require_customer(customer_id))
    if row is None:
        raise RecordNotFound(f"customer {customer_id} not found")
    return customer_record(row)


async def hold_customer(session: AsyncSession, customer_id: str) -> bool:
    """Whether the customer still exists, holding its row against an erasure until the commit
    (PostgreSQL `FOR KEY SHARE`, which the erasure's `FOR UPDATE` waits for and which waits
    for it, while a merge's update of the row goes on; SQLite transactions are exclusive
    already). Work that writes a customer's derived data (compaction) calls this first, so it
    never writes for an erased customer."""
    query = select(Customer.id).where(Customer.id == require_customer(customer_id))
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        query = query.with_for_update(read=True, key_share=True)
    return await session.scalar(query) is not None


async def rename_customer(session: AsyncSession, customer_id: str, display_name: str) -> None:
    row = await session.get(Customer, require_customer(customer_id))
    if row is None:
        raise RecordNotFound(f"customer {customer_id} not found")
    row.display_name = display_name


async def mark_merged(session: AsyncSession, customer_id: str, into: str) -> None:
    """Mark the customer merged into `into`: it owns nothing any more and is never linked to."""
    result = await session.execute(
        update(Customer)
        .where(Customer.id == require_customer(customer_id))
        .values(merged_into=into)
    )
    if not cast(CursorResult[Any], result).rowcount:
        raise RecordNotFound(f"customer {customer_id} not found")


async def unmerged_customers(session: AsyncSession, customer_ids: Iterable[str]) -> set[str]:
    """Those of `customer_ids` that exist and were not merged away."""
    wanted = [i for i in customer_ids if i]
    if not wanted:
        return set()
    rows = await session.scalars(
        select(Customer.id).where(
            values_in(session, Customer.id, wanted), Customer.merged_into.is_(None)
        )
    )
    return set(rows)


async def surviving_customer(session: AsyncSession, customer_id: str) -> str | None:
    """The customer `customer_id` is now: itself, or the customer an operator merged it into
    (followed to the end); `None` when no such customer exists."""
    seen: set[str] = set()
    current = customer_id
    while current not in seen:
        seen.add(current)
        row = await session.get(Customer, current)
        if row is None:
            return None
        if row.merged_into is None:
            return current
        current = row.merged_into
    return None  # a merge cycle cannot come from merges; refuse rather than loop


async def find_identity(
    session: AsyncSession, channel: str, external_id: str
) -> ChannelIdentityRecord | None:
    params = {"channel": channel, "external_id": external_id}
    row = (await session.execute(_FIND_IDENTITY, params)).first()
    return identity_record(row) if row else None


async def find_identities(
    session: AsyncSession, keys: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], ChannelIdentityRecord]:
    """`find_identity` for several (channel, external id) keys in one statement; the keys
    without an identity are left out."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    params = rows_params("keys", wanted, width=2, arrays=as_arrays(session))
    rows = await session.execute(_FIND_IDENTITIES.of(session), params)
    return {(row.channel, row.external_id): identity_record(row) for row in rows}


async def create_identity(
    session: AsyncSession,
    *,
    customer_id: str,
    channel: str,
    external_id: str,
    link_level: str,
    evidence: dict[str, Any],
) -> ChannelIdentityRecord:
    values = {
        "customer_id": require_customer(customer_id),
        "channel": channel,
        "external_id": external_id,
        "link_level": link_level,
        "evidence": evidence,
    }
    return identity_record((await session.execute(_INSERT_IDENTITY, values)).one())


async def update_identity(
    session: AsyncSession,
    identity_id: str,
    *,
    link_level: str | None = None,
    customer_id: str | None = None,
    evidence: dict[str, Any] | None = None,
) -> ChannelIdentityRecord:
    row = await session.get(ChannelIdentity, identity_id)
    if row is None:
        raise RecordNotFound(f"identity {identity_id} not found")
    if link_level is not None:
        row.link_level = link_level
    if customer_id is not None:
        row.customer_id = require_customer(customer_id)
    if evidence is not None:
        # A new level's evidence keeps the profile name the channel gave (`identity_names`).
        kept = (row.evidence or {}).get(PROFILE_NAME_KEY)
        row.evidence = evidence if kept is None else {**evidence, PROFILE_NAME_KEY: kept}
    row.updated_at = utcnow()
    await session.flush()
    return identity_record(row)


async def identity_by_id(session: AsyncSession, identity_id: str) -> ChannelIdentityRecord:
    row = (await session.execute(_IDENTITY_BY_ID, {"identity_id": identity_id})).first()
    if row is None:
        raise RecordNotFound(f"identity {identity_id} not found")
    return identity_record(row)


async def find_identity_by_id(
    session: AsyncSession, identity_id: str
) -> ChannelIdentityRecord | None:
    row = await session.get(ChannelIdentity, identity_id)
    return identity_record(row) if row else None


async def list_identities(session: AsyncSession, customer_id: str) -> list[ChannelIdentityRecord]:
    rows = await session.scalars(
        select(ChannelIdentity)
        .where(ChannelIdentity.customer_id == require_customer(customer_id))
        .order_by(ChannelIdentity.created_at, ChannelIdentity.id)
    )
    return [identity_record(row) for row in rows]


async def add_identifier(
    session: AsyncSession,
    *,
    customer_id: str,
    kind: str,
    value: str,
    link_level: str,
    source_identity_id: str | None,
    new_customer: bool = False,
) -> IdentifierRecord:
    """Attach an identifier learned from `source_identity_id`, or update that row's level.
    `new_customer`: the customer was created in this transaction and holds no identifier yet,
    so there is nothing to look up."""
    if new_customer:
        values = {
            "customer_id": require_customer(customer_id),
            "kind": kind,
            "value": value,
            "link_level": link_level,
            "source_identity_id": source_identity_id,
        }
        return identifier_record((await session.execute(_INSERT_IDENTIFIER, values)).one())
    existing = await session.scalar(
        select(CustomerIdentifier).where(
            CustomerIdentifier.customer_id == require_customer(customer_id),
            CustomerIdentifier.kind == kind,
            CustomerIdentifier.value == value,
            CustomerIdentifier.source_identity_id.is_(None)
            if source_identity_id is None
            else CustomerIdentifier.source_identity_id == source_identity_id,
        )
    )
    if existing is not None:
        existing.link_level = link_level
        await session.flush()
        return identifier_record(existing)
    row = CustomerIdentifier(
        customer_id=customer_id,
        kind=kind,
        value=value,
        link_level=link_level,
        source_identity_id=source_identity_id,
    )
    session.add(row)
    await session.flush()
    return identifier_record(row)


async def identifiers_of(session: AsyncSession, customer_id: str) -> list[IdentifierRecord]:
    params = {"customer_id": require_customer(customer_id)}
    rows = await session.execute(_IDENTIFIERS_OF, params)
    return [identifier_record(row) for row in rows]


async def owners_of_identifier(
    session: AsyncSession, kind: str, value: str
) -> list[IdentifierRecord]:
    """Who already holds this identifier (across customers): the input to linking."""
    rows = await session.scalars(_OWNERS, {"kind": kind, "value": value})
    return [identifier_record(row) for row in rows]


async def owners_of_identifiers(
    session: AsyncSession, identifiers: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], list[IdentifierRecord]]:
    """`owners_of_identifier` for several (kind, value) pairs in one statement; an identifier
    nobody holds is left out."""
    wanted = sorted(set(identifiers))
    if not wanted:
        return {}
    owners: dict[tuple[str, str], list[IdentifierRecord]] = {}
    params = rows_params("identifiers", wanted, width=2, arrays=as_arrays(session))
    for row in await session.execute(_OWNERS_OF_MANY.of(session), params):
        owners.setdefault((row.kind, row.value), []).append(identifier_record(row))
    return owners


async def identifier_counts(
    session: AsyncSession, customer_ids: Iterable[str], *, link_level: str
) -> list[tuple[str, str, int]]:
    """(customer, kind, distinct values) of the identifiers these customers hold at
    `link_level`; kinds a customer holds none of are left out."""
    wanted = sorted(set(customer_ids))
    if not wanted:
        return []
    rows = await session.execute(
        _IDENTIFIER_COUNTS.of(session), {"customers": wanted, "link_level": link_level}
    )
    return [(customer, kind, int(count)) for customer, kind, count in rows]


async def set_identifier_level(
    session: AsyncSession, *, customer_id: str, kind: str, value: str, link_level: str
) -> None:
    """Set the level of every row of this identifier the customer holds (from any source)."""
    await session.execute(
        update(CustomerIdentifier)
        .where(
            CustomerIdentifier.customer_id == require_customer(customer_id),
            CustomerIdentifier.kind == kind,
            CustomerIdentifier.value == value,
        )
        .values(link_level=link_level)
    )

"""What an operator reads and corrects across a customer's profile: the customer search, the
whole fact history (superseded and retracted rows included), one fact by id, the customer's
episode on a channel, and the link from a corrected fact to the row that replaces it."""

from __future__ import annotations

import re

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import RecordNotFound, require_customer
from gateway.storage.models import ChannelIdentity, Customer, CustomerIdentifier, Episode, Fact
from gateway.storage.records import CustomerRecord, FactRecord
from gateway.storage.repositories.customers import customer_record
from gateway.storage.repositories.facts import fact_record
from gateway.storage.repositories.identity_names import PROFILE_NAME_KEY

_NAME_KEYS = ("name", "full_name", "preferred_name")
_NOT_DIGIT = re.compile(r"\D")


async def search_customers(
    session: AsyncSession, query: str, *, limit: int
) -> list[CustomerRecord]:
    """Customers (not merged away) whose id, display name, channel identity (its id or the
    profile name its channel gave), identifier or current name fact matches `query`
    (case-insensitive substring), newest first.

    With four digits or more, identities and identifiers also match on the query's digits
    alone, so "+55 11 99876-5432" finds "whatsapp:+5511998765432". A blank query finds none.
    The query is literal text: LIKE's ``%`` and ``_`` (and the escape character) are escaped.
    """
    text = query.strip()
    if not text:
        return []
    digits = _NOT_DIGIT.sub("", text)
    identity_match = [
        ChannelIdentity.external_id.icontains(text, autoescape=True),
        # The name the channel gave (WhatsApp's ProfileName, Telegram's first and last name).
        ChannelIdentity.evidence[PROFILE_NAME_KEY].as_string().icontains(text, autoescape=True),
    ]
    identifier_match = [CustomerIdentifier.value.icontains(text, autoescape=True)]
    if len(digits) >= 4:
        identity_match.append(ChannelIdentity.external_id.contains(digits, autoescape=True))
        identifier_match.append(CustomerIdentifier.value.contains(digits, autoescape=True))
    by_identity = select(ChannelIdentity.customer_id).where(or_(*identity_match))
    by_identifier = select(CustomerIdentifier.customer_id).where(or_(*identifier_match))
    by_name_fact = select(Fact.customer_id).where(
        Fact.key.in_(_NAME_KEYS),
        Fact.value.icontains(text, autoescape=True),
        Fact.superseded_by.is_(None),
        Fact.retracted.is_(False),
    )
    rows = await session.scalars(
        select(Customer)
        .where(
            Customer.merged_into.is_(None),
            or_(
                Customer.id == text,
                Customer.display_name.icontains(text, autoescape=True),
                Customer.id.in_(by_identity),
                Customer.id.in_(by_identifier),
                Customer.id.in_(by_name_fact),
            ),
        )
        .order_by(Customer.created_at.desc(), Customer.id)
        .limit(limit)
    )
    return [customer_record(row) for row in rows]


async def all_facts(session: AsyncSession, customer_id: str) -> list[FactRecord]:
    """Every fact row of the customer, current, superseded and retracted, by key then id."""
    rows = await session.scalars(
        select(Fact)
        .where(Fact.customer_id == require_customer(customer_id))
        .order_by(Fact.key, Fact.id)
    )
    return [fact_record(row) for row in rows]


async def fact_by_id(session: AsyncSession, customer_id: str, fact_id: int) -> FactRecord:
    """One fact row of the customer, in force or not. Raises `RecordNotFound`."""
    row = await session.scalar(
        select(Fact).where(Fact.customer_id == require_customer(customer_id), Fact.id == fact_id)
    )
    if row is None:
        raise RecordNotFound(f"fact {fact_id} not found")
    return fact_record(row)


async def first_episode_id(session: AsyncSession, customer_id: str, channel: str) -> str | None:
    """The customer's earliest episode on `channel` (open or closed), if any."""
    return await session.scalar(
        select(Episode.id)
        .where(Episode.customer_id == require_customer(customer_id), Episode.channel == channel)
        .order_by(Episode.started_at)
        .limit(1)
    )


async def supersede_fact(session: AsyncSession, fact_id: int, by_fact_id: int) -> None:
    """Mark fact `fact_id` as replaced by `by_fact_id` (the history keeps both rows)."""
    row = await session.get(Fact, fact_id)
    if row is not None:
        row.superseded_by = by_fact_id
        await session.flush()

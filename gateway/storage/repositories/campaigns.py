"""Campaigns and their anchored system messages."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import RecordNotFound
from gateway.storage.models import AnchoredMessage, Campaign
from gateway.storage.records import AnchoredMessageRecord, CampaignRecord


def _anchored(row: AnchoredMessage) -> AnchoredMessageRecord:
    return AnchoredMessageRecord(
        id=row.id, campaign_id=row.campaign_id, position=row.position, text=row.text
    )


def campaign_record(row: Campaign, anchored: Sequence[AnchoredMessage] = ()) -> CampaignRecord:
    return CampaignRecord(
        id=row.id,
        name=row.name,
        variables=dict(row.variables or {}),
        deleted=row.deleted,
        expire_at=row.expire_at,
        created_at=row.created_at,
        anchored=tuple(_anchored(message) for message in anchored),
    )


async def create_campaign(
    session: AsyncSession,
    *,
    name: str,
    messages: Sequence[str],
    variables: dict[str, Any] | None = None,
    expire_at: date | None = None,
) -> CampaignRecord:
    row = Campaign(name=name, variables=variables or {}, expire_at=expire_at)
    session.add(row)
    await session.flush()
    anchored = [
        AnchoredMessage(campaign_id=row.id, position=index, text=text)
        for index, text in enumerate(messages)
    ]
    session.add_all(anchored)
    await session.flush()
    return campaign_record(row, anchored)


async def _messages_of(session: AsyncSession, campaign_id: str) -> list[AnchoredMessage]:
    rows = await session.scalars(
        select(AnchoredMessage)
        .where(AnchoredMessage.campaign_id == campaign_id)
        .order_by(AnchoredMessage.position, AnchoredMessage.id)
    )
    return list(rows)


async def get_campaign(session: AsyncSession, campaign_id: str) -> CampaignRecord:
    row = await session.get(Campaign, campaign_id)
    if row is None:
        raise RecordNotFound(f"campaign {campaign_id} not found")
    return campaign_record(row, await _messages_of(session, campaign_id))


async def list_campaigns(
    session: AsyncSession, *, include_deleted: bool = False
) -> list[CampaignRecord]:
    query = select(Campaign)
    if not include_deleted:
        query = query.where(Campaign.deleted.is_(False))
    rows = list(await session.scalars(query.order_by(Campaign.created_at, Campaign.id)))
    return [campaign_record(row, await _messages_of(session, row.id)) for row in rows]


async def delete_campaign(session: AsyncSession, campaign_id: str) -> None:
    row = await session.get(Campaign, campaign_id)
    if row is None:
        raise RecordNotFound(f"campaign {campaign_id} not found")
    row.deleted = True


async def active_anchored_messages(
    session: AsyncSession, campaign_id: str, today: date
) -> list[AnchoredMessageRecord]:
    """Anchored messages while the campaign is active:
    `deleted = false and (expire_at is null or expire_at >= today)`."""
    rows = await session.scalars(
        select(AnchoredMessage)
        .join(Campaign, Campaign.id == AnchoredMessage.campaign_id)
        .where(
            Campaign.id == campaign_id,
            Campaign.deleted.is_(False),
            or_(Campaign.expire_at.is_(None), Campaign.expire_at >= today),
        )
        .order_by(AnchoredMessage.position, AnchoredMessage.id)
    )
    return [_anchored(row) for row in rows]

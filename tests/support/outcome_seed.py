"""A seeded set of conversations for the outcome report, with the figures worked out by hand.

Two days, three channels, one other tenant, one episode before the range. Handoffs go through
the real ownership change (`change_owner`), whose audit entry is then dated to the scenario's
moment (the audit takes the wall clock)."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.message_meta import OPERATOR_AUTHOR, MessageMeta
from gateway.storage.models import AuditEntry
from gateway.storage.records import NewMessage
from gateway.storage.repositories import conversations, customers, episodes, messages
from gateway.storage.repositories.conversations import MessageSeen
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef
from gateway.turns.answer.routing import ASKED_BY_CUSTOMER, MODEL_FAILED, MODEL_MARKER
from gateway.turns.handoff import change_owner
from identity.conversation_owner import AskedForHuman, Event, Took

DAY_1 = date(2026, 3, 2)
DAY_2 = date(2026, 3, 3)
OTHER_TENANT = TenantRef(domain="other.example")
T1 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
T2 = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)


def _rows(lines: list[str]) -> list[list[str]]:
    return [line.split(",") for line in lines]


# (day, channel) -> the CSV's figures after day and channel: conversations, customer, bot and
# operator messages, resolved by the bot, handed over, by reason (phrase, failures, model
# marker, operator take-over, other), first reply bot p50/p90, human p50/p90, waiting p50/p90,
# satisfaction answers and their average.
EXPECTED_ALL_TENANTS = _rows(
    [
        "2026-03-02,telegram,1,1,0,1,0,1,0,1,0,0,0,,,40,40,30,30,0,",
        "2026-03-02,whatsapp,2,4,4,1,1,1,1,0,0,0,0,2,4,70,70,60,60,0,",
        "2026-03-03,telegram,1,1,1,0,1,0,0,0,0,0,0,3,3,,,,,0,",
        "2026-03-03,webchat,2,2,2,1,0,2,0,0,1,1,0,6,8,5,5,,,0,",
        "2026-03-03,whatsapp,1,1,0,0,0,0,0,0,0,0,0,,,,,,,0,",
        "2026-03-02,all,3,5,4,2,1,2,1,1,0,0,0,2,4,40,70,30,60,0,",
        "2026-03-03,all,4,4,3,1,1,2,0,0,1,1,0,6,8,5,5,,,0,",
        "total,all,7,9,7,3,2,4,1,1,1,1,0,4,8,40,70,30,60,0,",
    ]
)
# Only the default tenant: the other tenant's telegram conversation of day 2 left out.
EXPECTED_DEFAULT_TENANT = _rows(
    [
        "2026-03-02,telegram,1,1,0,1,0,1,0,1,0,0,0,,,40,40,30,30,0,",
        "2026-03-02,whatsapp,2,4,4,1,1,1,1,0,0,0,0,2,4,70,70,60,60,0,",
        "2026-03-03,webchat,2,2,2,1,0,2,0,0,1,1,0,6,8,5,5,,,0,",
        "2026-03-03,whatsapp,1,1,0,0,0,0,0,0,0,0,0,,,,,,,0,",
        "2026-03-02,all,3,5,4,2,1,2,1,1,0,0,0,2,4,40,70,30,60,0,",
        "2026-03-03,all,3,3,2,1,0,2,0,0,1,1,0,6,8,5,5,,,0,",
        "total,all,6,8,6,3,1,4,1,1,1,1,0,4,8,40,70,30,60,0,",
    ]
)

Line = tuple[str, float]  # author ("customer", "bot", "operator") and seconds after the start
Change = tuple[Event, str, float]  # the event, its reason and seconds after the start


async def _episode(
    session: AsyncSession,
    channel: str,
    start: datetime,
    lines: list[Line],
    changes: list[Change] = [],  # noqa: B006 - never mutated
    tenant: TenantRef = DEFAULT_TENANT,
) -> None:
    customer = await customers.create_customer(session)
    episode = await episodes.open_episode(
        session, customer_id=customer.id, channel=channel, started_at=start, tenant=tenant
    )
    for author, after in lines:
        operator = author == "operator"
        await messages.append_message(
            session,
            NewMessage(
                customer.id,
                episode.id,
                channel,
                "user" if author == "customer" else "assistant",
                f"{author} at {after}",
                5,
                meta=MessageMeta(author=OPERATOR_AUTHOR, actor="ana.ops")
                if operator
                else MessageMeta(),
                created_at=start + timedelta(seconds=after),
                tenant=tenant,
            ),
        )
    key = f"{channel}:{uuid.uuid4().hex}"
    seen = MessageSeen(key, customer.id, channel, None, key, start, inbound=True, tenant=tenant)
    conversation = (await conversations.note_messages(session, [seen]))[key]
    for event, reason, after in changes:
        actor = event.actor if isinstance(event, Took) else "bot"
        await change_owner(session, None, conversation.id, event, actor=actor, reason=reason)
        newest = select(func.max(AuditEntry.id)).scalar_subquery()
        await session.execute(
            update(AuditEntry)
            .where(AuditEntry.id == newest)
            .values(created_at=start + timedelta(seconds=after))
        )


async def seed_outcomes(session: AsyncSession) -> None:
    take = Took("ana.ops")
    # Day 1, WhatsApp: the bot alone; then a customer who asked for a person.
    await _episode(
        session,
        "whatsapp",
        T1,
        [("customer", 0), ("bot", 2), ("customer", 60), ("bot", 64)],
    )
    await _episode(
        session,
        "whatsapp",
        T1,
        [("customer", 0), ("bot", 4), ("customer", 30), ("bot", 31), ("operator", 101)],
        [(AskedForHuman(ASKED_BY_CUSTOMER), ASKED_BY_CUSTOMER, 31), (take, "taking it", 91)],
    )
    # Day 1, Telegram: the model failed repeatedly, no bot reply stored.
    await _episode(
        session,
        "telegram",
        T1,
        [("customer", 0), ("operator", 50)],
        [(AskedForHuman(MODEL_FAILED), MODEL_FAILED, 10), (take, "taking it", 40)],
    )
    # Day 2, web chat: an operator takes over from the bot; the model's marker.
    await _episode(
        session,
        "webchat",
        T2,
        [("customer", 0), ("bot", 6), ("operator", 25)],
        [(take, "I will answer", 20)],
    )
    await _episode(
        session,
        "webchat",
        T2,
        [("customer", 0), ("bot", 8)],
        [(AskedForHuman(MODEL_MARKER), MODEL_MARKER, 8)],
    )
    # Day 2, WhatsApp: nobody answered yet.
    await _episode(session, "whatsapp", T2, [("customer", 0)])
    # Day 2, Telegram, another tenant: the bot alone.
    await _episode(session, "telegram", T2, [("customer", 0), ("bot", 3)], tenant=OTHER_TENANT)
    # The day before the range: left out.
    await _episode(session, "whatsapp", T1 - timedelta(days=1), [("customer", 0), ("bot", 1)])

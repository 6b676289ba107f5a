"""What a customer erasure reaches beyond the customer's own rows, on SQLite and PostgreSQL:
pending links on both sides, campaigns bound to them, events and idempotency records naming
them, audit rows about them; another customer's rows stay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.customers.erasure import AfterCommit, erase_customer
from gateway.customers.export import export_customer
from gateway.customers.forgetting import Forgetting
from gateway.memory.recall import RecallCache
from gateway.storage.models import (
    AnchoredMessage,
    AuditEntry,
    Campaign,
    ChannelIdentity,
    Customer,
    IdempotencyKey,
    Message,
    OutboundEvent,
    PendingLink,
)
from gateway.storage.repositories import audit, campaigns, customers, outbound_events, pending_links
from tests.support.stored_conversations import store_episode

START = datetime(2026, 11, 2, 14, 0, tzinfo=UTC)


async def _identity(session: AsyncSession, customer_id: str, number: str) -> str:
    record = await customers.create_identity(
        session,
        customer_id=customer_id,
        channel="whatsapp",
        external_id=f"whatsapp:{number}",
        link_level="verified",
        evidence={"description": "carrier-verified sender"},
    )
    return record.id


async def test_erasure_reaches_links_campaigns_events_idempotency_and_audit(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions.begin() as session:
        gone = await store_episode(session, [("user", "oi, sou a Olga")], started_at=START)
        kept = await store_episode(session, [("user", "oi, sou o Ivo")], started_at=START)
        gone_identity = await _identity(session, gone.customer_id, "+5511900001111")
        kept_identity = await _identity(session, kept.customer_id, "+5511900002222")
        # Olga claims to be Ivo's, Ivo claims to be Olga's: both links name her.
        for identity, target in (
            (gone_identity, kept.customer_id),
            (kept_identity, gone.customer_id),
        ):
            await pending_links.propose_link(
                session,
                identity_id=identity,
                target_customer_id=target,
                identifier_kind="phone",
                identifier_value="+5511900003333",
                claimed_level="asserted",
                reason="stated number",
            )
        bound = await campaigns.create_campaign(
            session, name="olga", messages=["Olá Olga"], variables={"customer_id": gone.customer_id}
        )
        shared = await campaigns.create_campaign(session, name="everyone", messages=["Olá"])
        await outbound_events.add_event(
            session, "message.created", {"conversation": {"customer_id": gone.customer_id}}
        )
        await outbound_events.add_event(
            session, "message.created", {"conversation": {"customer_id": kept.customer_id}}
        )
        session.add(
            IdempotencyKey(
                key="k1",
                method="POST",
                path="/v1/context",
                fingerprint="0" * 64,
                status="done",
                response_status=200,
                response_body=f'{{"customer_id": "{gone.customer_id}"}}',
                locked_until=START + timedelta(days=1),
            )
        )
        await audit.record_audit(
            session,
            actor="ops",
            action="split",
            reason="two people",
            subject_type="customer",
            subject_id=kept.customer_id,
            details={"identities": ["whatsapp:+5511900001111"]},
        )
    after = AfterCommit(None, Forgetting(RecallCache(), None))
    document = await export_customer(sessions, gone.customer_id, actor="dpo", reason="request")
    assert len(document["pending_links"]) == 2
    assert [i["evidence"] for i in document["identities"]] == [
        {"description": "carrier-verified sender"}
    ]

    done = await erase_customer(sessions, after, gone.customer_id, actor="dpo", reason="request")
    assert done.counts["pending_links"] == 2
    assert (done.counts["campaigns"], done.counts["anchored_messages"]) == (1, 1)
    assert done.counts["outbound_events"] == 1 and done.counts["idempotency_keys"] == 1
    ours = [gone.customer_id, kept.customer_id]
    async with sessions() as session:
        names = set(
            await session.scalars(
                select(Campaign.name).where(Campaign.id.in_([bound.id, shared.id]))
            )
        )
        anchored = await session.scalar(
            select(func.count())
            .select_from(AnchoredMessage)
            .where(AnchoredMessage.campaign_id.in_([bound.id, shared.id]))
        )
        events = [
            payload
            for payload in await session.scalars(select(OutboundEvent.payload))
            if payload.get("conversation", {}).get("customer_id") in ours
        ]
        links = await session.scalar(
            select(func.count())
            .select_from(PendingLink)
            .where(PendingLink.identity_id.in_([gone_identity, kept_identity]))
        )
        split = await session.scalar(
            select(AuditEntry).where(
                AuditEntry.action == "split", AuditEntry.subject_id == kept.customer_id
            )
        )
        exported = await session.scalar(
            select(AuditEntry).where(
                AuditEntry.action == "customer.exported", AuditEntry.subject_id == gone.customer_id
            )
        )
        left = set(await session.scalars(select(Customer.id).where(Customer.id.in_(ours))))
        ivo = await session.scalar(
            select(func.count()).select_from(Message).where(Message.customer_id == kept.customer_id)
        )
        identities = set(
            await session.scalars(
                select(ChannelIdentity.external_id).where(ChannelIdentity.customer_id.in_(ours))
            )
        )
    assert names == {"everyone"} and anchored == 1
    assert events == [{"conversation": {"customer_id": kept.customer_id}}]
    assert links == 0
    assert split is not None and split.details == {"erased": True} and split.actor == "ops"
    assert exported is not None and exported.details == {"erased": True}
    assert left == {kept.customer_id} and ivo == 1
    assert identities == {"whatsapp:+5511900002222"}

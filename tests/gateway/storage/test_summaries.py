from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import CustomerScopeRequired
from gateway.storage.records import NewMessage
from gateway.storage.repositories import customers, episodes, messages, summaries
from gateway.storage.updates import NewCompactionTrace


async def test_summary_pointer_only_moves_forward(session: AsyncSession) -> None:
    ana = await customers.create_customer(session)
    episode = await episodes.open_episode(session, customer_id=ana.id, channel="phone")
    ids = []
    for index in range(3):
        stored = await messages.append_message(
            session, NewMessage(ana.id, episode.id, "phone", "user", f"t{index}", token_count=2)
        )
        ids.append(stored.id)
    await summaries.save_summary(
        session,
        customer_id=ana.id,
        episode_id=episode.id,
        summary="up to 2",
        last_message_id=ids[1],
        origin_channel="phone",
        token_count=3,
        transcript_confidence=0.62,
    )
    stale = await summaries.save_summary(
        session,
        customer_id=ana.id,
        episode_id=episode.id,
        summary="stale",
        last_message_id=ids[0],
        origin_channel="phone",
        token_count=1,
    )
    assert (stale.summary, stale.last_message_id) == ("up to 2", ids[1])
    assert stale.transcript_confidence == pytest.approx(0.62)
    newer = await summaries.save_summary(
        session,
        customer_id=ana.id,
        episode_id=episode.id,
        summary="all",
        last_message_id=ids[2],
        origin_channel="phone",
        token_count=1,
    )
    assert newer.last_message_id == ids[2]


async def test_customer_summaries_exclude_current_and_other_customers(
    session: AsyncSession,
) -> None:
    ana = await customers.create_customer(session)
    bob = await customers.create_customer(session)
    for owner, channel in ((ana, "phone"), (ana, "webchat"), (bob, "whatsapp")):
        episode = await episodes.open_episode(session, customer_id=owner.id, channel=channel)
        stored = await messages.append_message(
            session, NewMessage(owner.id, episode.id, channel, "user", "x", token_count=1)
        )
        await summaries.save_summary(
            session,
            customer_id=owner.id,
            episode_id=episode.id,
            summary=f"{channel} summary",
            last_message_id=stored.id,
            origin_channel=channel,
            token_count=2,
        )
    found = await summaries.customer_summaries(session, ana.id)
    assert sorted(s.origin_channel for s in found) == ["phone", "webchat"]
    webchat = next(s for s in found if s.origin_channel == "webchat")
    rest = await summaries.customer_summaries(session, ana.id, exclude_episode=webchat.episode_id)
    assert [s.origin_channel for s in rest] == ["phone"]
    with pytest.raises(CustomerScopeRequired):
        await summaries.customer_summaries(session, "")


async def test_traces_record_before_and_after(session: AsyncSession) -> None:
    ana = await customers.create_customer(session)
    await summaries.add_trace(
        session,
        NewCompactionTrace(
            customer_id=ana.id,
            compactor="offline",
            facts_before={"facts": []},
            facts_after={"facts": [{"key": "email"}]},
            summary_after="s",
            tokens_in=100,
            tokens_out=10,
            duration_ms=5,
        ),
    )
    traces = await summaries.list_traces(session, ana.id)
    assert len(traces) == 1
    assert traces[0].facts_after == {"facts": [{"key": "email"}]}
    assert (traces[0].tokens_in, traces[0].tokens_out) == (100, 10)

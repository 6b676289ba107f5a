"""Bulk writes of fixtures: episodes with their messages keep the ingest invariants, and the
identities of a customer come back by channel."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.repositories import bulk, customers, episodes, messages

START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def _episode(
    channel: str, identity_id: str | None, counts: list[int], *, closed: bool
) -> bulk.BulkEpisode:
    stamps = [START + timedelta(minutes=i) for i in range(len(counts))]
    return bulk.BulkEpisode(
        channel=channel,
        identity_id=identity_id,
        started_at=stamps[0],
        last_message_at=stamps[-1],
        messages=tuple(
            bulk.BulkMessage(
                role="user" if i % 2 == 0 else "assistant",
                text=f"{channel} {i}",
                token_count=count,
                created_at=stamps[i],
                provider_message_id=f"{channel}-{i}",
            )
            for i, count in enumerate(counts)
        ),
        closed=closed,
        transcript_confidence=0.8 if channel == "phone" else None,
    )


async def test_episodes_and_messages_keep_order_totals_and_status(session: AsyncSession) -> None:
    customer = await customers.create_customer(session)
    identities = await bulk.create_identities(
        session,
        customer.id,
        {"phone": ("phone:+5511990001111", "verified"), "telegram": ("telegram:42", "asserted")},
        description="fixture",
    )
    assert {channel: record.link_level for channel, record in identities.items()} == {
        "phone": "verified",
        "telegram": "asserted",
    }
    assert identities["telegram"].evidence == {"description": "fixture", "level": "asserted"}

    written = await bulk.write_episodes(
        session,
        customer.id,
        [
            _episode("phone", identities["phone"].id, [3, 5, 7], closed=True),
            _episode("telegram", identities["telegram"].id, [2, 4], closed=False),
        ],
    )

    closed, open_ = written
    last = START + timedelta(minutes=2)
    assert (closed.episode.status, closed.episode.ended_at) == ("closed", last)
    assert (open_.episode.status, open_.episode.ended_at) == ("open", None)
    assert await episodes.get_episode(session, customer.id, closed.episode.id) == closed.episode
    stored = await messages.episode_messages(session, customer.id, closed.episode.id)
    assert [m.id for m in stored] == list(closed.message_ids)
    assert [m.provider_message_id for m in stored] == ["phone-0", "phone-1", "phone-2"]
    assert {m.identity_id for m in stored} == {identities["phone"].id}
    assert len(open_.message_ids) == 2
    assert await messages.history_token_total(session, customer.id) == 3 + 5 + 7 + 2 + 4


async def test_nothing_to_write_writes_nothing(session: AsyncSession) -> None:
    customer = await customers.create_customer(session)
    assert await bulk.write_episodes(session, customer.id, []) == []
    assert await messages.history_token_total(session, customer.id) == 0

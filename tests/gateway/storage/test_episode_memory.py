"""The reads and writes memory makes per episode: call versions, summary pointers, rebuilds
and the typed turns recall reads."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.message_meta import MessageMeta
from gateway.storage.records import NewFact, NewMessage
from gateway.storage.repositories import customers, episodes, facts, messages, summaries


async def test_a_call_episode_is_found_by_its_reference_and_versioned(
    session: AsyncSession,
) -> None:
    ana = await customers.create_customer(session)
    episode = await episodes.open_episode(
        session, customer_id=ana.id, channel="phone", external_ref="call:c-1"
    )
    assert await episodes.episode_by_external_ref(session, "call:c-1") == episode
    assert await episodes.episode_by_external_ref(session, "call:c-2") is None
    assert await messages.latest_in_episode(session, episode.id) is None
    for index, version in enumerate((1, 1, 2)):
        await messages.append_message(
            session,
            NewMessage(
                ana.id,
                episode.id,
                "phone",
                "user",
                f"t{index}",
                1,
                meta=MessageMeta(transcript_version=version),
            ),
        )
    latest = await messages.latest_in_episode(session, episode.id)
    assert latest is not None and latest.text == "t2"
    assert await messages.metas_of_episode(session, episode.id) == [
        MessageMeta(transcript_version=1),
        MessageMeta(transcript_version=1),
        MessageMeta(transcript_version=2),
    ]
    await episodes.set_transcript_version(session, episode.id, 2, transcript_confidence=0.5)
    locked = await episodes.lock_episode(session, episode.id)
    assert locked is not None and (locked.version, locked.transcript_confidence) == (2, 0.5)
    assert await episodes.lock_episode(session, "missing") is None


async def test_summary_pointer_and_dropping_summaries(session: AsyncSession) -> None:
    ana = await customers.create_customer(session)
    ids = []
    for _ in range(2):
        episode = await episodes.open_episode(session, customer_id=ana.id, channel="webchat")
        stored = await messages.append_message(
            session, NewMessage(ana.id, episode.id, "webchat", "user", "oi", 1)
        )
        assert await summaries.summary_pointer(session, episode.id) is None
        await summaries.save_summary(
            session,
            customer_id=ana.id,
            episode_id=episode.id,
            summary="greeting",
            last_message_id=stored.id,
            origin_channel="webchat",
            token_count=1,
            sentences=[{"text": "Oi.", "source_message_id": stored.id}],
        )
        ids.append((episode.id, stored.id))
    (first, first_message), (second, _) = ids
    assert await summaries.summary_pointer(session, first) == first_message
    found = await summaries.summary_of_locked_episode(session, first)
    assert found is not None and found.sentences == (
        {"text": "Oi.", "source_message_id": first_message},
    )

    await summaries.drop_episode_summary(session, first)
    assert await summaries.summary_pointer(session, first) is None
    assert await summaries.summary_pointer(session, second) is not None
    await summaries.drop_customer_summaries(session, ana.id)
    assert await summaries.customer_summaries(session, ana.id) == []


async def test_a_rebuild_retracts_all_but_pinned_facts(session: AsyncSession) -> None:
    ana = await customers.create_customer(session)
    episode = await episodes.open_episode(session, customer_id=ana.id, channel="whatsapp")
    source = await messages.append_message(
        session, NewMessage(ana.id, episode.id, "whatsapp", "user", "a@b.c, +5511", 4)
    )
    await facts.record_fact(session, ana.id, NewFact("email", "a@b.c", "contact", source.id))
    await facts.record_fact(
        session, ana.id, NewFact("phone", "+5511", "contact", source.id, pinned=True)
    )
    await facts.retract_unpinned(session, ana.id)
    assert [fact.key for fact in await facts.current_facts(session, ana.id)] == ["phone"]
    assert [fact.retracted for fact in await facts.fact_history(session, ana.id, "email")] == [True]


async def test_typed_turns_leave_out_calls_voice_notes_and_other_identities(
    session: AsyncSession,
) -> None:
    ana = await customers.create_customer(session)
    identities = []
    for external_id in ("whatsapp:+5511", "telegram:42"):
        identity = await customers.create_identity(
            session,
            customer_id=ana.id,
            channel=external_id.split(":")[0],
            external_id=external_id,
            link_level="verified",
            evidence={},
        )
        identities.append(identity.id)
    whatsapp, telegram = identities
    chat = await episodes.open_episode(session, customer_id=ana.id, channel="whatsapp")
    call = await episodes.open_episode(session, customer_id=ana.id, channel="phone")
    rows = [
        (chat.id, "whatsapp", "user", "typed", whatsapp, None, MessageMeta(speaker="Ana")),
        (chat.id, "whatsapp", "user", "voice note", whatsapp, 0.9, MessageMeta()),
        (chat.id, "whatsapp", "system", "system line", whatsapp, None, MessageMeta()),
        (chat.id, "telegram", "assistant", "reply", telegram, None, MessageMeta()),
        (call.id, "phone", "user", "on the phone", whatsapp, None, MessageMeta()),
    ]
    stored = {}
    for episode_id, channel, role, text, identity_id, confidence, meta in rows:
        message = await messages.append_message(
            session,
            NewMessage(
                ana.id,
                episode_id,
                channel,
                role,
                text,
                1,
                identity_id=identity_id,
                transcript_confidence=confidence,
                meta=meta,
            ),
        )
        stored[text] = message.id

    lines = await messages.typed_turns(session, ana.id, skip_channels={"phone"}, limit=10)
    assert [(line.text, line.speaker) for line in lines] == [("reply", None), ("typed", "Ana")]
    assert lines[1].id == stored["typed"] and lines[1].episode_id == chat.id
    own = await messages.typed_turns(
        session, ana.id, skip_channels={"phone"}, identity_id=whatsapp, limit=10
    )
    assert [line.text for line in own] == ["typed"]
    assert (
        await messages.typed_turns(
            session, ana.id, skip_channels={"phone"}, exclude_episode=chat.id, limit=10
        )
        == []
    )
    newest = await messages.typed_turns(session, ana.id, limit=1)
    assert [line.text for line in newest] == ["on the phone"]

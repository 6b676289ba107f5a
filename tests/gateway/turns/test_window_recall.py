"""Recall in the window: relevant turns of other episodes, tagged; a call's turns masked, of its
current transcript version only."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from context import TiktokenCounter, load_encoding
from gateway.customers.resolve import ResolvedIdentity, resolve_identity
from gateway.storage.message_meta import MessageMeta
from gateway.storage.records import NewMessage
from gateway.storage.repositories import episodes, messages, summaries
from gateway.tenants import TenantSettings
from gateway.turns.window import assemble_context
from identity import ChannelIdentityKey, LinkLevel, ScopePolicy, WhatsAppSender, observe

COUNTER = TiktokenCounter(load_encoding())


async def _say(
    session: AsyncSession,
    owner: ResolvedIdentity,
    episode_id: str,
    channel: str,
    text: str,
    *,
    transcript_version: int | None = None,
) -> int:
    heard = channel == "phone"
    stored = await messages.append_message(
        session,
        NewMessage(
            owner.customer_id,
            episode_id,
            channel,
            "user",
            text,
            COUNTER.count(text),
            owner.identity_id if channel == "whatsapp" else None,
            transcript_confidence=0.7 if heard else None,
            meta=MessageMeta(transcript_version=transcript_version),
        ),
    )
    return stored.id


def _viewer(owner: ResolvedIdentity, level: LinkLevel) -> ResolvedIdentity:
    policy = ScopePolicy.default()
    return ResolvedIdentity(
        customer_id=owner.customer_id,
        identity_id="web-identity",
        key=ChannelIdentityKey.parse("web:acct:someone"),
        level=level,
        allowed_scopes=policy.allowed_scopes(level, "webchat"),
        outcome="known",
        pending_links=0,
        own_facts_only=level in policy.own_facts_only,
    )


async def test_recall_brings_typed_turns_and_masked_turns_of_calls(
    session: AsyncSession,
) -> None:
    owner = await resolve_identity(session, observe(WhatsAppSender("whatsapp:+5511998765432")))
    chat = await episodes.open_episode(
        session, customer_id=owner.customer_id, channel="whatsapp", identity_id=owner.identity_id
    )
    await _say(session, owner, chat.id, "whatsapp", "My greyhound Biscuit loves the beach.")
    await _say(session, owner, chat.id, "whatsapp", "The weather was nice today.")
    call = await episodes.open_episode(
        session, customer_id=owner.customer_id, channel="phone", transcript_confidence=0.7
    )
    raw = await _say(
        session,
        owner,
        call.id,
        "phone",
        "RAW-CALL greyhound vet appointment, call me on 11 99876-5432",
        transcript_version=1,
    )
    await summaries.save_summary(
        session,
        customer_id=owner.customer_id,
        episode_id=call.id,
        summary="[2026-01-01] Customer: booked a vet visit for the greyhound.",
        last_message_id=raw,
        origin_channel="phone",
        token_count=14,
        transcript_confidence=0.7,
        sentences=[
            {
                "text": "booked a vet visit for the greyhound.",
                "source_message_id": raw,
                "date": "2026-01-01",
                "speaker": "Customer",
            }
        ],
    )
    assembled = await assemble_context(
        session,
        identity=_viewer(owner, LinkLevel.VERIFIED),
        settings=TenantSettings(),
        counter=COUNTER,
        message="what about my greyhound?",
    )
    system = assembled.window.messages[0].content
    assert "Customer: My greyhound Biscuit loves the beach." in system
    assert "[whatsapp · typed · " in system
    # The summary's sentence gives way to the turn it was taken from.
    assert "booked a vet visit for the greyhound." not in system
    assert "phone · transcript · confidence 0.70" in system
    # The call's own words, its identifiers masked.
    assert "Customer: RAW-CALL greyhound vet appointment, call me on [phone]" in system
    assert "99876" not in system

    # An asserted identity sees summaries, not another identity's raw turns.
    asserted = await assemble_context(
        session,
        identity=_viewer(owner, LinkLevel.ASSERTED),
        settings=TenantSettings(),
        counter=COUNTER,
        message="what about my greyhound?",
    )
    text = asserted.window.messages[0].content
    assert "Biscuit loves the beach" not in text
    assert "RAW-CALL" not in text
    assert "booked a vet visit for the greyhound." in text


async def test_a_call_posted_again_is_recalled_from_its_current_transcript(
    session: AsyncSession,
) -> None:
    owner = await resolve_identity(session, observe(WhatsAppSender("whatsapp:+5511998765433")))
    call = await episodes.open_episode(
        session, customer_id=owner.customer_id, channel="phone", transcript_confidence=0.7
    )
    await _say(session, owner, call.id, "phone", "OLD-TAKE greyhound kennel", transcript_version=1)
    await _say(session, owner, call.id, "phone", "NEW-TAKE greyhound kennel", transcript_version=2)
    await episodes.set_transcript_version(session, call.id, 2, transcript_confidence=0.7)
    assembled = await assemble_context(
        session,
        identity=_viewer(owner, LinkLevel.VERIFIED),
        settings=TenantSettings(),
        counter=COUNTER,
        message="the greyhound kennel",
    )
    system = assembled.window.messages[0].content
    assert "Customer: NEW-TAKE greyhound kennel" in system
    assert "OLD-TAKE" not in system

"""Window assembly from storage: scope filtering at every link level (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from context import TiktokenCounter, load_encoding
from gateway.customers.resolve import ResolvedIdentity, resolve_identity
from gateway.storage.records import NewFact, NewMessage
from gateway.storage.repositories import episodes, facts, messages, summaries
from gateway.tenants import TenantSettings
from gateway.turns.window import DialogueTurn, assemble_context, cut_dialogue
from identity import ChannelIdentityKey, LinkLevel, ScopePolicy, WhatsAppSender, observe

COUNTER = TiktokenCounter(load_encoding())
VALUES = {
    "public": "open 9-18",
    "profile": "Aninha",
    "account": "PED-4471",
    "payment": "ana.pix@example.org",
}


async def _seed(session: AsyncSession) -> ResolvedIdentity:
    owner = await resolve_identity(session, observe(WhatsAppSender("whatsapp:+5511998765432")))
    episode = await episodes.open_episode(
        session, customer_id=owner.customer_id, channel="whatsapp", identity_id=owner.identity_id
    )
    source = await messages.append_message(
        session,
        NewMessage(
            owner.customer_id, episode.id, "whatsapp", "user", "dados", 2, owner.identity_id
        ),
    )
    for scope, value in VALUES.items():
        await facts.record_fact(
            session, owner.customer_id, NewFact(f"{scope}_fact", value, scope, source.id)
        )
    return owner


@pytest.mark.parametrize("level", list(LinkLevel))
async def test_window_holds_only_the_scopes_of_the_level(
    session: AsyncSession, level: LinkLevel
) -> None:
    owner = await _seed(session)
    policy = ScopePolicy.default()
    # Another identity of the same customer, seen at `level` for this message.
    viewer = ResolvedIdentity(
        customer_id=owner.customer_id,
        identity_id="someone-else",
        key=ChannelIdentityKey.parse("telegram:99"),
        level=level,
        allowed_scopes=policy.allowed_scopes(level, "telegram"),
        outcome="known",
        pending_links=0,
        own_facts_only=level in policy.own_facts_only,
    )
    assembled = await assemble_context(
        session, identity=viewer, settings=TenantSettings(), counter=COUNTER, message="pedido"
    )
    system = assembled.window.messages[0].content
    shown = {scope for scope, value in VALUES.items() if value in system}
    expected = {
        LinkLevel.VERIFIED: set(VALUES),
        LinkLevel.ASSERTED: {"public", "profile"},
        LinkLevel.INFERRED: {"public"},
        LinkLevel.ANONYMOUS: set(),  # public exists, but was not learned from this identity
    }[level]
    assert shown == expected


async def test_other_episodes_enter_only_as_tagged_summaries(session: AsyncSession) -> None:
    owner = await _seed(session)
    phone = await episodes.open_episode(session, customer_id=owner.customer_id, channel="phone")
    raw = await messages.append_message(
        session,
        NewMessage(owner.customer_id, phone.id, "phone", "user", "RAW-TRANSCRIPT-TURN 4?71", 9),
    )
    await summaries.save_summary(
        session,
        customer_id=owner.customer_id,
        episode_id=phone.id,
        summary="Customer called about order 4471 (uncertain digits).",
        last_message_id=raw.id,
        origin_channel="phone",
        token_count=12,
        transcript_confidence=0.62,
    )
    assembled = await assemble_context(
        session, identity=owner, settings=TenantSettings(), counter=COUNTER, message="e o pedido?"
    )
    rendered = "\n".join(m.content for m in assembled.window.messages)
    assert "RAW-TRANSCRIPT-TURN" not in rendered
    assert "Customer called about order 4471" in rendered
    assert "phone · transcript · confidence 0.62" in rendered


def test_cut_dialogue_keeps_the_newest_characters() -> None:
    turns = [DialogueTurn("user", "a" * 10), DialogueTurn("assistant", "b" * 10)]
    kept, dropped = cut_dialogue(turns, 15)
    assert [t.content for t in kept] == ["a" * 5, "b" * 10]
    assert dropped == 5
    assert cut_dialogue(turns, 100) == (turns, 0)


async def test_the_window_counts_the_episodes_unsummarized_tokens_before_the_message(
    session: AsyncSession,
) -> None:
    owner = await resolve_identity(session, observe(WhatsAppSender("whatsapp:+5511998765432")))
    episode = await episodes.open_episode(
        session, customer_id=owner.customer_id, channel="whatsapp", identity_id=owner.identity_id
    )
    stored = []
    for index, (role, text) in enumerate(
        [("user", "oi"), ("assistant", "olá!"), ("user", "meu pedido atrasou"), ("user", "e aí?")]
    ):
        new = NewMessage(
            owner.customer_id, episode.id, "whatsapp", role, text, 3 + index, owner.identity_id
        )
        stored.append(await messages.append_message(session, new))
    await summaries.save_summary(
        session,
        customer_id=owner.customer_id,
        episode_id=episode.id,
        summary="Ana said hello.",
        last_message_id=stored[0].id,
        origin_channel="whatsapp",
        token_count=5,
    )
    current = stored[-1]
    assembled = await assemble_context(
        session,
        identity=owner,
        settings=TenantSettings(),
        counter=COUNTER,
        message=current.text,
        episode_id=episode.id,
        message_id=current.id,
    )
    # After the summary's last message, before the current one: what compaction's trigger sums.
    assert assembled.unsummarized_tokens == 4 + 5
    assert (
        assembled.unsummarized_tokens
        == await messages.unsummarized_tokens(session, owner.customer_id, episode.id, stored[0].id)
        - current.token_count
    )

"""Write one LoCoMo conversation through the real storage, identity and compaction code.

* One customer per conversation: speaker A is the customer (role ``user``), speaker B the
  assistant. The customer is created by the identity step from a WhatsApp sender; the web chat
  (verified account), Telegram and phone identities are attached to the same customer.
* Session *N* (1-based) is one episode on ``CHANNELS[(N - 1) % 4]``: WhatsApp, web chat,
  Telegram, phone, round-robin. A phone session is stored as a transcript with the fixed
  confidence ``PHONE_CONFIDENCE`` (0.85) on the episode and on each of its turns.
* Turn *k* (0-based) of a session is stored at the session's timestamp + *k* × ``TURN_GAP``,
  with its token count from the counter (`messages.append_message`), the speaker's name and the
  ``dia_id`` in its `MessageMeta`. Image turns carry their caption as ``[image: caption]`` (see
  `devtools.eval.locomo`).
* Every episode is closed and compacted by `MemoryWorker.handle` with a ``closed`` job — the
  offline compactor, as the worker runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Final

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from devtools.eval.locomo import Conversation
from gateway.customers.resolve import ResolvedIdentity, resolve_identity
from gateway.memory.queue import CompactionJob, InProcessQueue
from gateway.memory.worker import MemoryWorker
from gateway.storage.message_meta import MessageMeta
from gateway.storage.records import NewMessage
from gateway.storage.repositories import bulk, episodes, messages
from identity import ChannelIdentityKey, LinkLevel, ScopePolicy, WhatsAppSender, observe

__all__ = ["CHANNELS", "PHONE_CONFIDENCE", "TURN_GAP", "Ingested", "ingest"]

CHANNELS: Final = ("whatsapp", "webchat", "telegram", "phone")
PHONE_CONFIDENCE: Final = 0.85
TURN_GAP: Final = timedelta(seconds=30)


@dataclass(frozen=True, slots=True)
class Ingested:
    """A stored conversation: who asks, and where each dia id went."""

    customer_id: str
    web: ResolvedIdentity  # the verified web chat identity the questions come from
    message_ids: dict[str, int]  # dia id → message id
    channels: dict[str, str]  # dia id → channel of its episode
    history_tokens: int


def _number(index: int) -> str:
    return f"+1555{index:07d}"


async def _identities(
    session: AsyncSession, customer_id: str, tag: str, index: int
) -> dict[str, tuple[str, str]]:
    """(identity id, external id) per channel besides WhatsApp."""
    keys = {
        "webchat": (f"web:acct:locomo-{tag}", LinkLevel.VERIFIED.value),
        "telegram": (f"telegram:{900_000 + index}", LinkLevel.VERIFIED.value),
        "phone": (f"phone:{_number(index)}", LinkLevel.INFERRED.value),
    }
    created = await bulk.create_identities(
        session, customer_id, keys, description="evaluation fixture"
    )
    return {channel: (record.id, record.external_id) for channel, record in created.items()}


async def ingest(
    sessions: async_sessionmaker[AsyncSession],
    conversation: Conversation,
    counter: TokenCounter,
    *,
    index: int = 0,
) -> Ingested:
    """Store ``conversation`` and compact every episode; ``index`` keeps identities distinct
    when several conversations share a database."""
    message_ids: dict[str, int] = {}
    channels: dict[str, str] = {}
    episode_ids: list[str] = []
    history = 0
    async with sessions.begin() as session:
        owner = await resolve_identity(
            session, observe(WhatsAppSender(f"whatsapp:{_number(index)}"))
        )
        customer_id = owner.customer_id
        identities = {
            "whatsapp": (owner.identity_id, str(owner.key)),
            **await _identities(session, customer_id, conversation.sample_id, index),
        }
        for number, block in enumerate(conversation.sessions):
            channel = CHANNELS[number % len(CHANNELS)]
            confidence = PHONE_CONFIDENCE if channel == "phone" else None
            started = block.started_at.replace(tzinfo=UTC)
            episode = await episodes.open_episode(
                session,
                customer_id=customer_id,
                channel=channel,
                identity_id=identities[channel][0],
                started_at=started,
                transcript_confidence=confidence,
            )
            episode_ids.append(episode.id)
            at = started
            for offset, turn in enumerate(block.turns):
                at = started + offset * TURN_GAP
                customer = turn.speaker == conversation.speaker_a
                tokens = counter.count(turn.text)
                stored = await messages.append_message(
                    session,
                    NewMessage(
                        customer_id=customer_id,
                        episode_id=episode.id,
                        channel=channel,
                        role="user" if customer else "assistant",
                        text=turn.text,
                        token_count=tokens,
                        identity_id=identities[channel][0] if customer else None,
                        transcript_confidence=confidence,
                        meta=MessageMeta(speaker=turn.speaker, fields=(("dia_id", turn.dia_id),)),
                        created_at=at,
                    ),
                )
                history += tokens
                message_ids[turn.dia_id] = stored.id
                channels[turn.dia_id] = channel
            await episodes.touch_episode(session, episode.id, at)
            await episodes.close_episode(session, episode.id, at)
        web_id, web_external = identities["webchat"]
    worker = MemoryWorker(sessions, counter, InProcessQueue())
    for episode_id in episode_ids:
        await worker.handle(CompactionJob(customer_id, episode_id, "closed"))
    policy = ScopePolicy.default()
    web = ResolvedIdentity(
        customer_id=customer_id,
        identity_id=web_id,
        key=ChannelIdentityKey.parse(web_external),
        level=LinkLevel.VERIFIED,
        allowed_scopes=policy.allowed_scopes(LinkLevel.VERIFIED, "webchat"),
        outcome="known",
        pending_links=0,
        own_facts_only=LinkLevel.VERIFIED in policy.own_facts_only,
    )
    return Ingested(customer_id, web, message_ids, channels, history)

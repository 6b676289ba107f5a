"""The flow of one inbound message (DESIGN §2), from a parsed message to a sent reply.

`accept` makes the message durable — identity resolved, raw message and a pending turn stored
in one transaction — and is all a webhook waits for. `drain` then answers a conversation's
pending turns one at a time, in arrival order, under the conversation lock: window, model,
reply and usage stored (refused if a newer lock holder wrote), reply sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from redis.asyncio import Redis
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Channel, InboundMessage, OutboundMessage, SendFailed
from channels.redaction import redact
from context import TokenCounter
from gateway.config import Settings
from gateway.coordination.dedupe import SeenKeys, Sighting
from gateway.coordination.locks import ConversationLocks, Held
from gateway.customers.evidence import observe_inbound
from gateway.customers.resolve import ResolvedIdentity, resolve_identity, rules_for
from gateway.memory.queue import CompactionJob, CompactionQueue
from gateway.memory.recall import RecallCache
from gateway.providers import (
    FALLBACK_MESSAGE,
    ProviderError,
)
from gateway.providers.pool import ProviderPool
from gateway.providers.transcriber import Transcriber
from gateway.runtime.clock import utcnow
from gateway.runtime.metrics import Metrics
from gateway.storage.errors import DuplicateMessage, IdentityRace
from gateway.storage.records import MessageRecord, NewMessage, TurnRecord
from gateway.storage.repositories import (
    customers,
    episodes,
    messages,
    summaries,
    tenants,
    turns,
)
from gateway.tenants import TenantSettings
from gateway.turns import delivery
from gateway.turns.voice_notes import voice_text
from gateway.turns.window import assemble_context, budget_for
from identity import ChannelIdentityKey, LinkLevel

log = logging.getLogger("relaydesk.pipeline")

MAX_DELIVERY_ATTEMPTS = 5
DELIVERY_LEASE = timedelta(minutes=2)
# While this many inbound requests (provider webhooks, web chat and transcript posts) are being
# acknowledged in this process, background work (storing the inbox, answering turns) waits, up
# to YIELD_MAX_S per step: under a burst the acknowledgements get the CPU first, and the work,
# already durable, follows. It slows down then; it never stops.
YIELD_BACKLOG = 2
YIELD_MAX_S = 1.0
YIELD_POLL_S = 0.005


@dataclass(frozen=True, slots=True)
class Accepted:
    message_id: int
    customer_id: str
    duplicate: bool
    conversation_key: str
    closed_episode_id: str | None = None  # an idle episode this message closed


class StaleWriter(Exception):
    """This process's conversation lock expired and a newer holder already wrote."""


def conversation_key(customer_id: str, channel: str) -> str:
    return f"{customer_id}:{channel}"


class Pipeline:
    def __init__(
        self,
        *,
        settings: Settings,
        sessions: async_sessionmaker[AsyncSession],
        counter: TokenCounter,
        locks: ConversationLocks,
        channels: dict[str, Channel],
        providers: ProviderPool,
        metrics: Metrics,
        redis: Redis | None = None,
        memory: CompactionQueue | None = None,
        transcriber: Transcriber | None = None,
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.counter = counter
        self.locks = locks
        self.channels = channels
        self.providers = providers
        self.metrics = metrics
        self.redis = redis
        self.seen = SeenKeys(redis) if redis is not None else None
        self.memory = memory
        self.transcriber = transcriber
        self.recall_cache = RecallCache()
        self.tenant_cache = tenants.SettingsCache()
        self._inflight: dict[tuple[str, str], asyncio.Future[Accepted]] = {}
        self.ingesting = 0  # inbound requests being acknowledged in this process now

    # Accepting: durable before any 2xx.

    async def accept(
        self, inbound: InboundMessage, *, host: str | None = None, background: bool = False
    ) -> Accepted:
        """Store one inbound message (idempotent on channel + provider message id).

        `background`: called off the request path (the inbox), so it does not count as an
        acknowledgement that background work yields to."""
        if background:
            return await self._accept_once(inbound, host)
        with self.ingest_request():
            return await self._accept_once(inbound, host)

    @contextmanager
    def ingest_request(self) -> Iterator[None]:
        """Mark an inbound request being acknowledged (background work yields to it)."""
        self.ingesting += 1
        try:
            yield
        finally:
            self.ingesting -= 1

    async def _accept_once(self, inbound: InboundMessage, host: str | None) -> Accepted:
        key = (inbound.channel, inbound.provider_message_id)
        running = self._inflight.get(key)
        if running is not None:  # a concurrent replay in this process: share its outcome
            first = await asyncio.shield(running)
            return Accepted(first.message_id, first.customer_id, True, first.conversation_key)
        future: asyncio.Future[Accepted] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            accepted = await self._accept(inbound, host)
            future.set_result(accepted)
            return accepted
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here, so a replay-less failure is not logged twice
            raise
        finally:
            del self._inflight[key]

    async def _accept(self, inbound: InboundMessage, host: str | None) -> Accepted:
        sighting = Sighting.UNKNOWN  # without Redis, or while it is down: the constraint decides
        if self.seen is not None:
            sighting = await self.seen.sight(inbound.channel, inbound.provider_message_id)
        if sighting is Sighting.REPEAT:
            existing = await self._existing(inbound)
            if existing is not None:
                return existing
            # Seen but not stored (the first attempt failed): store it now.
        for attempt in range(3):
            try:
                async with self.sessions.begin() as session:
                    accepted = await self._store(session, inbound, host)
                break
            except DuplicateMessage:
                existing = await self._existing(inbound)
                if existing is None:
                    raise
                return existing
            except (IntegrityError, IdentityRace):
                # A concurrent first message of the same sender created its identity; the
                # retry finds it.
                if attempt == 2:
                    raise
        self.metrics.inbound_messages.labels(inbound.channel).inc()
        if accepted.closed_episode_id is not None and self.memory is not None:
            # Does not raise while the queue is down: the job is kept and added later.
            await self.memory.enqueue(
                CompactionJob(accepted.customer_id, accepted.closed_episode_id, "closed")
            )
        return accepted

    async def _existing(self, inbound: InboundMessage) -> Accepted | None:
        async with self.sessions() as session:
            found = await messages.find_by_provider_id(
                session, inbound.channel, inbound.provider_message_id
            )
        if found is None:
            return None
        return Accepted(
            found.id, found.customer_id, True, conversation_key(found.customer_id, found.channel)
        )

    async def tenant(
        self, session: AsyncSession, host: str | None, channel: str | None
    ) -> TenantSettings:
        return await self.tenant_cache.get(session, host=host, channel=channel)

    async def _store(
        self, session: AsyncSession, inbound: InboundMessage, host: str | None
    ) -> Accepted:
        tenant = await self.tenant(session, host, inbound.channel)
        region = self.settings.default_region
        rules = rules_for(tenant, region)
        secret = self.settings.webchat_secret
        observation = observe_inbound(
            inbound,
            webchat_secret=secret.get_secret_value() if secret else None,
            region=region,
            blocked=rules.blocked,
        )
        identity = await resolve_identity(session, observation, rules=rules)
        now = inbound.received_at
        episode = await episodes.latest_open_episode(
            session, identity.customer_id, inbound.channel, identity.identity_id
        )
        idle = timedelta(minutes=tenant.episode_idle_minutes)
        closed: str | None = None
        if episode is not None and now - episode.last_message_at > idle:
            await episodes.close_episode(session, episode.id, episode.last_message_at)
            closed, episode = episode.id, None
        if episode is None:
            episode = await episodes.open_episode(
                session,
                customer_id=identity.customer_id,
                channel=inbound.channel,
                identity_id=identity.identity_id,
                started_at=now,
                campaign_id=inbound.extra.get("campaign_id") or None,
            )
        thread_key = f"{inbound.channel}:{inbound.sender}"
        supersedes_id = None
        if inbound.edit_of is not None:
            supersedes_id = await _latest_version(session, thread_key, inbound.edit_of)
        # Card numbers and security codes never reach storage, windows or logs.
        cleaned = redact(inbound.text)
        token_count = self.counter.count(cleaned.text)  # the one count, at ingest
        stored = await messages.append_message(
            session,
            NewMessage(
                customer_id=identity.customer_id,
                episode_id=episode.id,
                channel=inbound.channel,
                role="user",
                text=cleaned.text,
                token_count=token_count,
                identity_id=identity.identity_id,
                provider_message_id=inbound.provider_message_id,
                transcript_confidence=inbound.transcript_confidence,
                media={"items": [vars_of(m) for m in inbound.media]} if inbound.media else None,
                extra={
                    **dict(inbound.extra),
                    "sender": inbound.sender,
                    "kind": inbound.kind,
                    "link_level": identity.level.value,
                    "allowed_scopes": sorted(identity.allowed_scopes),
                    "own_facts_only": identity.own_facts_only,
                    **({"redactions": cleaned.redacted_count} if cleaned.redacted_count else {}),
                },
                created_at=now,
                thread_key=thread_key,
                supersedes_id=supersedes_id,
            ),
            add_to_episode=False,
        )
        key = conversation_key(identity.customer_id, inbound.channel)
        if inbound.kind != "edit":  # an edit is kept as history, not answered as a new question
            await turns.create_turn(
                session,
                inbound_message_id=stored.id,
                customer_id=identity.customer_id,
                episode_id=episode.id,
                conversation_key=key,
            )
        # Last, so the episode row (every message of the conversation updates it) stays locked
        # only until the commit that follows.
        await episodes.record_message(session, episode.id, at=now, tokens=token_count)
        return Accepted(stored.id, identity.customer_id, False, key, closed)

    # Answering: one turn at a time per conversation.

    async def drain(self, key: str) -> int:
        """Answer the conversation's pending turns in order; returns how many were answered.

        The lock is taken only when a turn is waiting (a kick for a turn another process
        already answered costs one query) and held until none is left."""
        async with self.sessions() as session:
            floor = await turns.current_fence(session, key)
            if await turns.next_pending(session, key) is None:
                return 0
        answered = 0
        async with self.locks.hold(key, floor=floor) as held:
            while True:
                await self.yield_to_ingest()
                async with self.sessions() as session:
                    turn = await turns.next_pending(session, key)
                    if turn is None:
                        return answered
                    inbound = await messages.get_message(
                        session, turn.customer_id, turn.inbound_message_id
                    )
                await self._answer(turn, inbound, held)
                answered += 1

    async def yield_to_ingest(self) -> None:
        """Wait (bounded) while inbound requests pile up in this process."""
        if self.ingesting < YIELD_BACKLOG:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + YIELD_MAX_S
        while self.ingesting >= YIELD_BACKLOG and loop.time() < deadline:
            await asyncio.sleep(YIELD_POLL_S)

    async def _answer(self, turn: TurnRecord, inbound: MessageRecord, held: Held) -> None:
        text_in = await self._voice_text(inbound)
        async with self.sessions() as session:
            channel = inbound.channel
            tenant = await self.tenant(session, None, channel)
            identity = await _identity_of(session, inbound)
            assembled = await assemble_context(
                session,
                identity=identity,
                settings=tenant,
                counter=self.counter,
                message=text_in,
                episode_id=turn.episode_id,
                message_id=inbound.id,
                recall_cache=self.recall_cache,
            )
        window = assembled.window
        budget = budget_for(tenant)
        provider = self.providers.for_window(tenant, window.report.estimated_tokens)
        fields: dict[str, Any] = {"report": window.report.to_dict(), "provider": provider.name}
        try:
            completion = await provider.complete(window.messages, max_tokens=budget.output_reserve)
            text = completion.text
            fields.update(
                status="done",
                model=completion.model,
                prompt_tokens=completion.usage.prompt_tokens,
                completion_tokens=completion.usage.completion_tokens,
                cached_tokens=completion.usage.cached_tokens,
                attempts=completion.attempts,
            )
        except ProviderError as exc:
            log.warning("model call failed", extra={"fields": {"turn": turn.id, "error": str(exc)}})
            text = tenant.fallback_message or FALLBACK_MESSAGE
            fields.update(status="failed", model=provider.model, error=str(exc)[:2000])
            fields["attempts"] = exc.attempts
        # The reply is stored with its delivery lease taken, so sending needs no claim of its own.
        fields.update(delivery_status="sending", delivery_lease_until=utcnow() + DELIVERY_LEASE)
        reply = await self._store_reply(turn, held, inbound, text, fields)
        await self._send(turn, inbound, reply, claimed=True)
        await self._maybe_compact(turn, tenant)

    async def _maybe_compact(self, turn: TurnRecord, tenant: TenantSettings) -> None:
        """Enqueue compaction once the episode's unsummarized tokens pass the high-water
        mark; the worker compacts down to the low-water mark (hysteresis)."""
        if self.memory is None:
            return
        async with self.sessions() as session:
            summary = await summaries.episode_summary(session, turn.customer_id, turn.episode_id)
            pending = await messages.unsummarized_tokens(
                session,
                turn.customer_id,
                turn.episode_id,
                summary.last_message_id if summary else None,
            )
        if pending > tenant.threshold_tokens:
            await self.memory.enqueue(CompactionJob(turn.customer_id, turn.episode_id))

    async def _voice_text(self, inbound: MessageRecord) -> str:
        if self.transcriber is None:
            return inbound.text
        return await voice_text(
            inbound,
            sessions=self.sessions,
            channel=self.channels.get(inbound.channel),
            transcriber=self.transcriber,
            counter=self.counter,
        )

    async def _store_reply(
        self,
        turn: TurnRecord,
        held: Held,
        inbound: MessageRecord,
        text: str,
        fields: dict[str, Any],
    ) -> MessageRecord:
        async with self.sessions.begin() as session:
            if held.fence is not None and not await turns.claim_fence(
                session, turn.conversation_key, held.fence
            ):
                raise StaleWriter(f"turn {turn.id}: a newer lock holder wrote first")
            reply = await messages.append_message(
                session,
                NewMessage(
                    customer_id=turn.customer_id,
                    episode_id=turn.episode_id,
                    channel=inbound.channel,
                    role="assistant",
                    text=text,
                    token_count=self.counter.count(text),
                    identity_id=inbound.identity_id,
                    provider_message_id=f"reply:{inbound.id}",
                    thread_key=inbound.thread_key,
                    extra={"in_reply_to": inbound.id},
                ),
                add_to_episode=False,
            )
            await turns.finish_turn(session, turn.id, reply_message_id=reply.id, **fields)
            await episodes.record_message(
                session, turn.episode_id, at=reply.created_at, tokens=reply.token_count
            )
        return reply

    async def _send(
        self,
        turn: TurnRecord,
        inbound: MessageRecord,
        reply: MessageRecord,
        *,
        claimed: bool = False,
    ) -> None:
        """Deliver the stored reply under a delivery lease (`claimed`: taken when the reply was
        stored); a retryable failure is left for `retry_deliveries`."""
        if not claimed:
            async with self.sessions.begin() as session:
                if not await turns.claim_delivery(session, turn.id, DELIVERY_LEASE):
                    return  # another sender holds it, or it is done
        channel = self.channels.get(inbound.channel)
        sender = str((inbound.extra or {}).get("sender", ""))
        status, error = "sent", None
        sent_ids: tuple[str, ...] = ()
        if channel is None:
            status, error = "failed", f"no channel {inbound.channel!r} configured"
        else:
            try:
                result = await channel.send(
                    OutboundMessage(
                        channel=inbound.channel,
                        recipient=sender,
                        text=reply.text,
                        reply_to=inbound.provider_message_id,
                        message_id=str(reply.id),
                    )
                )
                sent_ids = tuple(i for i in result.provider_message_ids if i)
            except SendFailed as exc:
                status = "retry" if exc.retryable else "failed"
                error = str(exc)
        attempts = turn.delivery_attempts + 1
        if status == "retry" and attempts >= MAX_DELIVERY_ATTEMPTS:
            status = "failed"
        async with self.sessions.begin() as session:
            fields: dict[str, Any] = {
                "delivery_status": status,
                "delivery_attempts": attempts,
                "delivery_lease_until": None,
            }
            if error is not None:
                fields["error"] = error[:2000]
                log.warning(
                    "reply not delivered",
                    extra={"fields": {"turn": turn.id, "status": status, "error": error}},
                )
            await turns.finish_turn(session, turn.id, **fields)
            if sent_ids:
                await delivery.record_sent(
                    session,
                    channel=inbound.channel,
                    provider_ids=sent_ids,
                    turn_id=turn.id,
                    reply_message_id=reply.id,
                )

    async def retry_deliveries(self) -> int:
        """Send again the replies whose delivery failed in a retryable way."""
        async with self.sessions() as session:
            waiting = await turns.undelivered(session, limit=100)
        for turn in waiting:
            async with self.sessions() as session:
                inbound = await messages.get_message(
                    session, turn.customer_id, turn.inbound_message_id
                )
                if turn.reply_message_id is None:
                    continue
                reply = await messages.get_message(session, turn.customer_id, turn.reply_message_id)
            await self._send(turn, inbound, reply)
        return len(waiting)

    async def pending_conversations(self) -> list[str]:
        async with self.sessions() as session:
            return await turns.pending_conversations(session)


def vars_of(media: Any) -> dict[str, Any]:
    return {"url": media.url, "content_type": media.content_type}


async def _latest_version(session: AsyncSession, thread_key: str, message_key: str) -> int | None:
    """The newest stored version (original or earlier edit) of the channel message an edit
    replaces: the thread's user rows whose `extra["message_key"]` is `message_key`."""
    found: int | None = None
    after: int | None = None
    while True:
        page = await messages.thread_messages(session, thread_key, after_id=after, limit=200)
        for record in page:
            if record.role == "user" and (record.extra or {}).get("message_key") == message_key:
                found = record.id
        if len(page) < 200:
            return found
        after = page[-1].id


async def _identity_of(session: AsyncSession, inbound: MessageRecord) -> ResolvedIdentity:
    """The identity as resolved when the message arrived (its evidence decides the scopes)."""
    extra = inbound.extra or {}
    identity_id = inbound.identity_id or ""
    row = await customers.identity_by_id(session, identity_id)
    return ResolvedIdentity(
        customer_id=inbound.customer_id,
        identity_id=identity_id,
        key=ChannelIdentityKey.parse(row.external_id),
        level=LinkLevel.parse(str(extra.get("link_level", "anonymous"))),
        allowed_scopes=frozenset(extra.get("allowed_scopes", ["public"])),
        outcome="known",
        pending_links=0,
        own_facts_only=bool(extra.get("own_facts_only", True)),
    )

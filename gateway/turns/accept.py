"""Accept: make one inbound message durable — all a webhook's 2xx waits for (via the inbox).

In one transaction: the sender's identity resolved from its channel's evidence, the episode
found or opened (an idle one closed), the raw message stored with its one token count and its
sender snapshot, and a pending turn created for the answer step. Idempotent on channel +
provider message id (Redis `SET NX` in front of the database's unique constraint).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import InboundMessage, Media, PayloadInvalid
from channels.redaction import redact
from context import TokenCounter
from gateway.config import Settings
from gateway.coordination.dedupe import SeenKeys, Sighting
from gateway.customers.evidence import EvidenceRule, observe_inbound
from gateway.customers.resolve import ResolvedIdentity, resolve_identity, rules_for
from gateway.memory.queue import CompactionJob, CompactionQueue
from gateway.runtime.metrics import Metrics
from gateway.storage.errors import DuplicateMessage, IdentityRace
from gateway.storage.records import NewMessage, SenderSnapshot
from gateway.storage.repositories import episodes, messages, tenants, turns
from gateway.tenants import TenantSettings
from gateway.turns.backpressure import Backpressure


@dataclass(frozen=True, slots=True)
class Accepted:
    message_id: int
    customer_id: str
    duplicate: bool
    conversation_key: str
    closed_episode_id: str | None = None  # an idle episode this message closed


def conversation_key(customer_id: str, channel: str) -> str:
    """One customer on one channel: its turns are answered one at a time, in order."""
    return f"{customer_id}:{channel}"


def thread_key(channel: str, sender: str) -> str:
    """The chat thread of one sender on one channel: its messages keep their arrival order."""
    return f"{channel}:{sender}"


class Acceptor:
    def __init__(
        self,
        *,
        settings: Settings,
        sessions: async_sessionmaker[AsyncSession],
        counter: TokenCounter,
        evidence: Mapping[str, EvidenceRule],
        tenant_cache: tenants.SettingsCache,
        backpressure: Backpressure,
        metrics: Metrics,
        seen: SeenKeys | None = None,
        memory: CompactionQueue | None = None,
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.counter = counter
        self.evidence = evidence
        self.tenant_cache = tenant_cache
        self.backpressure = backpressure
        self.metrics = metrics
        self.seen = seen
        self.memory = memory
        self._inflight: dict[tuple[str, str], asyncio.Future[Accepted]] = {}

    async def accept(
        self, inbound: InboundMessage, *, host: str | None = None, background: bool = False
    ) -> Accepted:
        """Store one inbound message (idempotent on channel + provider message id).

        `background`: called off the request path (the inbox), so it does not count as an
        acknowledgement that background work yields to."""
        if background:
            return await self._accept_once(inbound, host)
        with self.backpressure.ingest_request():
            return await self._accept_once(inbound, host)

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

    async def _identity(
        self, session: AsyncSession, inbound: InboundMessage, rules_tenant: TenantSettings
    ) -> ResolvedIdentity:
        rule = self.evidence.get(inbound.channel)
        if rule is None:
            raise PayloadInvalid(f"unknown channel {inbound.channel!r}")
        region = self.settings.default_region
        rules = rules_for(rules_tenant, region)
        secret = self.settings.webchat_secret
        observation = observe_inbound(
            rule,
            inbound,
            webchat_secret=secret.get_secret_value() if secret else None,
            region=region,
            blocked=rules.blocked,
        )
        return await resolve_identity(session, observation, rules=rules)

    async def _store(
        self, session: AsyncSession, inbound: InboundMessage, host: str | None
    ) -> Accepted:
        tenant = await self.tenant_cache.get(session, host=host, channel=inbound.channel)
        identity = await self._identity(session, inbound, tenant)
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
        thread = thread_key(inbound.channel, inbound.sender)
        supersedes_id = None
        if inbound.edit_of is not None:
            supersedes_id = await _latest_version(session, thread, inbound.edit_of)
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
                media={"items": [_media_item(m) for m in inbound.media]} if inbound.media else None,
                extra={
                    **dict(inbound.extra),
                    "kind": inbound.kind,
                    **({"redactions": cleaned.redacted_count} if cleaned.redacted_count else {}),
                },
                created_at=now,
                thread_key=thread,
                supersedes_id=supersedes_id,
                sender=SenderSnapshot(
                    sender=inbound.sender,
                    link_level=identity.level.value,
                    allowed_scopes=tuple(sorted(identity.allowed_scopes)),
                    own_facts_only=identity.own_facts_only,
                ),
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


def _media_item(media: Media) -> dict[str, str | None]:
    return {"url": media.url, "content_type": media.content_type}


async def _latest_version(session: AsyncSession, thread: str, message_key: str) -> int | None:
    """The newest stored version (original or earlier edit) of the channel message an edit
    replaces: the thread's user rows whose `extra["message_key"]` is `message_key`."""
    found: int | None = None
    after: int | None = None
    while True:
        page = await messages.thread_messages(session, thread, after_id=after, limit=200)
        for record in page:
            if record.role == "user" and (record.extra or {}).get("message_key") == message_key:
                found = record.id
        if len(page) < 200:
            return found
        after = page[-1].id

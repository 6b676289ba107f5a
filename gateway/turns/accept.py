"""Accept: make one inbound message durable — all a webhook's 2xx waits for (via the inbox).

In one transaction: the sender's identity resolved from its channel's evidence, the episode
found or opened (an idle one closed), the raw message stored with its one token count and its
sender snapshot, and a pending turn created for the answer step. Idempotent on channel +
provider message id (Redis `SET NX` in front of the database's unique constraint).

Background accepts (the inbox processor's) that start together are stored together, in one
transaction for the lot: each marked seen in Redis, the stored ones among them found in one
statement, the identity rows they need read at once, each resolved in arrival order,
their open episodes read at once, the messages and the turns inserted in one statement each
(ids in arrival order) and each episode updated once. Anything unusual (an edit, a failure)
stores that lot one message at a time instead, in order; a message after a failed one of the
same chat thread is then not stored (`ThreadBlocked`), so a thread keeps its order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import InboundMessage, PayloadInvalid
from channels.redaction import redact
from context import TokenCounter
from gateway.config import Settings
from gateway.coordination.dedupe import SeenKeys, Sighting
from gateway.customers.evidence import EvidenceRule, observe_inbound
from gateway.customers.resolve import (
    IdentityRules,
    ResolvedIdentity,
    resolve_identities,
    resolve_identity,
    rules_for,
)
from gateway.events.outbox import EventOutbox
from gateway.memory.queue import CompactionJob, CompactionQueue
from gateway.runtime.metrics import Metrics
from gateway.runtime.outages import is_storage_down
from gateway.storage.errors import DuplicateMessage, IdentityRace
from gateway.storage.message_meta import decode_meta
from gateway.storage.records import (
    EpisodeRecord,
    MessageRecord,
    NewMessage,
    NewTurn,
    SenderSnapshot,
)
from gateway.storage.repositories import conversations, episodes, messages, tenants, turns
from gateway.storage.repositories.conversations import MessageSeen
from gateway.tenants import TenantSettings
from gateway.turns.backpressure import Backpressure
from gateway.turns.handoff import message_created
from identity import IdentityObservation

log = logging.getLogger("relaydesk.accept")


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


class ThreadBlocked(Exception):
    """Not stored: an earlier message of the same chat thread, stored in the same lot, failed;
    this one waits so the thread keeps its order (the caller retries it later)."""


@dataclass(slots=True)
class _Waiting:
    """A background accept waiting for its lot to be stored."""

    inbound: InboundMessage
    host: str | None
    done: asyncio.Future[Accepted]

    @property
    def key(self) -> tuple[str, str]:
        return (self.inbound.channel, self.inbound.provider_message_id)

    @property
    def thread(self) -> str:
        return thread_key(self.inbound.channel, self.inbound.sender)


class _OneByOne(Exception):
    """A lot holds a message the lot path does not store (an edit): store it message by
    message."""


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
        events: EventOutbox | None = None,
    ) -> None:
        self.settings = settings
        self.events = events
        self.sessions = sessions
        self.counter = counter
        self.evidence = evidence
        self.tenant_cache = tenant_cache
        self.backpressure = backpressure
        self.metrics = metrics
        self.seen = seen
        self.memory = memory
        self._inflight: dict[tuple[str, str], asyncio.Future[Accepted]] = {}
        self._waiting: list[_Waiting] = []  # background accepts of the lot being gathered
        self._lots = asyncio.Lock()  # lots are stored one after another, in arrival order

    async def accept(
        self, inbound: InboundMessage, *, host: str | None = None, background: bool = False
    ) -> Accepted:
        """Store one inbound message (idempotent on channel + provider message id).

        `background`: called off the request path (the inbox), so it does not count as an
        acknowledgement that background work yields to; background accepts started together
        (before any of them awaits) are stored together, see the module docstring. One that
        raises `ThreadBlocked` was not stored."""
        if background:
            return await self._accept_once(inbound, host, self._accept_in_lot)
        with self.backpressure.ingest_request():
            return await self._accept_once(inbound, host, self._accept)

    async def _accept_once(
        self,
        inbound: InboundMessage,
        host: str | None,
        store: Callable[[InboundMessage, str | None], Awaitable[Accepted]],
    ) -> Accepted:
        key = (inbound.channel, inbound.provider_message_id)
        running = self._inflight.get(key)
        if running is not None:  # a concurrent replay in this process: share its outcome
            first = await asyncio.shield(running)
            return Accepted(first.message_id, first.customer_id, True, first.conversation_key)
        future: asyncio.Future[Accepted] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            accepted = await store(inbound, host)
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
        await self._stored(inbound, accepted)
        return accepted

    async def _accept_in_lot(self, inbound: InboundMessage, host: str | None) -> Accepted:
        """Join the lot being gathered; the first to join stores it once the others started
        together with it have joined (one turn of the event loop)."""
        waiting = _Waiting(inbound, host, asyncio.get_running_loop().create_future())
        self._waiting.append(waiting)
        if len(self._waiting) == 1:
            await self._lead()
        return await waiting.done

    async def _lead(self) -> None:
        lot: list[_Waiting] = []
        try:
            await asyncio.sleep(0)  # the accepts started with this one join meanwhile
            lot, self._waiting = self._waiting, []
            async with self._lots:
                await self._store_lot(lot)
        finally:
            # Cancelled (a shutdown): the lot's transaction rolled back; nobody waits forever.
            for waiting in lot or self._waiting:
                if not waiting.done.done():
                    waiting.done.cancel()
            if not lot:
                self._waiting = []

    async def _store_lot(self, lot: list[_Waiting]) -> None:
        try:
            stored = await self._store_together(lot)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_storage_down(exc):
                for waiting in lot:
                    waiting.done.set_exception(exc)
                return
            if not isinstance(exc, _OneByOne):
                log.info(
                    "a lot of messages is stored one by one",
                    extra={"fields": {"messages": len(lot), "error": type(exc).__name__}},
                )
            await self._store_each(lot)
            return
        for waiting, accepted in zip(lot, stored, strict=True):
            if not accepted.duplicate:
                await self._stored(waiting.inbound, accepted)
            waiting.done.set_result(accepted)

    async def _store_each(self, lot: list[_Waiting]) -> None:
        """The lot one message at a time, in order; a thread stops at its first failure."""
        failed: set[str] = set()
        for index, waiting in enumerate(lot):
            if waiting.thread in failed:
                waiting.done.set_exception(ThreadBlocked(waiting.thread))
                continue
            try:
                waiting.done.set_result(await self._accept(waiting.inbound, waiting.host))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                waiting.done.set_exception(exc)
                if is_storage_down(exc):
                    for rest in lot[index + 1 :]:
                        rest.done.set_exception(exc)
                    return
                failed.add(waiting.thread)

    async def _store_together(self, lot: list[_Waiting]) -> list[Accepted]:
        """The lot in one transaction; raises `_OneByOne` for a lot this path does not store."""
        if any(w.inbound.kind == "edit" or w.inbound.edit_of is not None for w in lot):
            raise _OneByOne
        if self.seen is not None:
            # Marks each one seen for the replays' fast path; which of them are stored already,
            # the one read below tells (a sighting only says "probably").
            await self.seen.sight_many([w.key for w in lot])
        async with self.sessions.begin() as session:
            known = await messages.find_by_provider_ids(session, [w.key for w in lot])
            fresh = [w for w in lot if w.key not in known]
            accepted_fresh = await self._store_many(session, fresh) if fresh else []
            stored = {w.key: a for w, a in zip(fresh, accepted_fresh, strict=True)}
        accepted: list[Accepted] = []
        for waiting in lot:
            found = known.get(waiting.key)
            if found is not None:
                key = conversation_key(found.customer_id, found.channel)
                accepted.append(Accepted(found.id, found.customer_id, True, key))
            else:
                accepted.append(stored[waiting.key])
        return accepted

    async def _store_many(self, session: AsyncSession, lot: list[_Waiting]) -> list[Accepted]:
        """`_store` for several messages (none stored yet, no edit), in arrival order."""
        settings = [
            await self.tenant_cache.get(session, host=w.host, channel=w.inbound.channel)
            for w in lot
        ]
        identities = await resolve_identities(
            session,
            [self._observe(w.inbound, tenant) for w, tenant in zip(lot, settings, strict=True)],
        )
        opened = await episodes.latest_open_episodes(
            session,
            {
                (i.customer_id, w.inbound.channel, i.identity_id)
                for w, i in zip(lot, identities, strict=True)
            },
        )
        new_messages: list[NewMessage] = []
        closed: list[str | None] = []
        added: dict[str, tuple[datetime, int]] = {}
        for waiting, identity, tenant in zip(lot, identities, settings, strict=True):
            inbound = waiting.inbound
            conversation = (identity.customer_id, inbound.channel, identity.identity_id)
            episode, closed_id = await self._episode_for(
                session, opened.get(conversation), inbound, identity, tenant
            )
            new = self._new_message(inbound, identity, episode.id, waiting.thread, None)
            # Later messages of the conversation see this one's time, as after its commit.
            opened[conversation] = replace(
                episode, last_message_at=max(episode.last_message_at, inbound.received_at)
            )
            at, tokens = added.get(episode.id, (inbound.received_at, 0))
            added[episode.id] = (max(at, inbound.received_at), tokens + new.token_count)
            new_messages.append(new)
            closed.append(closed_id)
        stored = await messages.append_messages(session, new_messages)
        keys = [conversation_key(m.customer_id, m.channel) for m in stored]
        # One statement for the lot's conversations (created on their first message).
        noted = await conversations.note_messages(
            session,
            (
                _seen(key, message, identity)
                for key, message, identity in zip(keys, stored, identities, strict=True)
            ),
        )
        for key, message in zip(keys, stored, strict=True):
            await message_created(session, self.events, noted[key], message)
        await turns.create_turns(
            session,
            [
                NewTurn(m.id, m.customer_id, m.episode_id, key)
                for m, key in zip(stored, keys, strict=True)
            ],
        )
        # Last, so the episode rows stay locked only until the commit that follows.
        await episodes.record_messages(session, added)
        return [
            Accepted(m.id, m.customer_id, False, key, closed_id)
            for m, key, closed_id in zip(stored, keys, closed, strict=True)
        ]

    async def _stored(self, inbound: InboundMessage, accepted: Accepted) -> None:
        """After the commit: counted, and an episode it closed queued for its final summary."""
        self.metrics.inbound_messages.labels(inbound.channel).inc()
        if accepted.closed_episode_id is not None and self.memory is not None:
            # Does not raise while the queue is down: the job is kept and added later.
            await self.memory.enqueue(
                CompactionJob(accepted.customer_id, accepted.closed_episode_id, "closed")
            )

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

    def _observe(
        self, inbound: InboundMessage, tenant: TenantSettings
    ) -> tuple[IdentityObservation, IdentityRules]:
        """The identity evidence of the message under the tenant's identity rules."""
        rule = self.evidence.get(inbound.channel)
        if rule is None:
            raise PayloadInvalid(f"unknown channel {inbound.channel!r}")
        region = self.settings.default_region
        rules = rules_for(tenant, region)
        secret = self.settings.webchat_secret
        observation = observe_inbound(
            rule,
            inbound,
            webchat_secret=secret.get_secret_value() if secret else None,
            region=region,
            blocked=rules.blocked,
        )
        return observation, rules

    async def _episode_for(
        self,
        session: AsyncSession,
        episode: EpisodeRecord | None,
        inbound: InboundMessage,
        identity: ResolvedIdentity,
        tenant: TenantSettings,
    ) -> tuple[EpisodeRecord, str | None]:
        """The conversation's open `episode`, or a new one when there is none or it has been
        idle too long (then closed); and the id of the episode closed, if any."""
        now = inbound.received_at
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
                campaign_id=inbound.provider_field("campaign_id"),
            )
        return episode, closed

    def _new_message(
        self,
        inbound: InboundMessage,
        identity: ResolvedIdentity,
        episode_id: str,
        thread: str,
        supersedes_id: int | None,
    ) -> NewMessage:
        # Card numbers and security codes never reach storage, windows or logs.
        cleaned = redact(inbound.text)
        return NewMessage(
            customer_id=identity.customer_id,
            episode_id=episode_id,
            channel=inbound.channel,
            role="user",
            text=cleaned.text,
            token_count=self.counter.count(cleaned.text),  # the one count, at ingest
            identity_id=identity.identity_id,
            provider_message_id=inbound.provider_message_id,
            transcript_confidence=inbound.transcript_confidence,
            media=inbound.media,
            meta=replace(
                decode_meta(inbound.extra),
                kind=inbound.kind,
                reply_to_provider_id=inbound.reply_to_provider_id or None,
                redactions=cleaned.redacted_count or None,
            ),
            created_at=inbound.received_at,
            thread_key=thread,
            supersedes_id=supersedes_id,
            sender=SenderSnapshot(
                sender=inbound.sender,
                link_level=identity.level.value,
                allowed_scopes=tuple(sorted(identity.allowed_scopes)),
                own_facts_only=identity.own_facts_only,
            ),
        )

    async def _store(
        self, session: AsyncSession, inbound: InboundMessage, host: str | None
    ) -> Accepted:
        tenant = await self.tenant_cache.get(session, host=host, channel=inbound.channel)
        observation, rules = self._observe(inbound, tenant)
        identity = await resolve_identity(session, observation, rules=rules)
        episode, closed = await self._episode_for(
            session,
            await episodes.latest_open_episode(
                session, identity.customer_id, inbound.channel, identity.identity_id
            ),
            inbound,
            identity,
            tenant,
        )
        thread = thread_key(inbound.channel, inbound.sender)
        supersedes_id = None
        if inbound.edit_of is not None:
            supersedes_id = await _latest_version(session, thread, inbound.edit_of)
        new = self._new_message(inbound, identity, episode.id, thread, supersedes_id)
        stored = await messages.append_message(session, new, add_to_episode=False)
        key = conversation_key(identity.customer_id, inbound.channel)
        noted = await conversations.note_messages(session, [_seen(key, stored, identity)])
        await message_created(session, self.events, noted[key], stored)
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
        await episodes.record_message(
            session, episode.id, at=inbound.received_at, tokens=new.token_count
        )
        return Accepted(stored.id, identity.customer_id, False, key, closed)


def _seen(key: str, message: MessageRecord, identity: ResolvedIdentity) -> MessageSeen:
    return MessageSeen(
        conversation_key=key,
        customer_id=message.customer_id,
        channel=message.channel,
        identity_id=identity.identity_id,
        external_id=identity.key.identifier.value,
        at=message.created_at,
        inbound=True,
    )


async def _latest_version(session: AsyncSession, thread: str, message_key: str) -> int | None:
    """The newest stored version (original or earlier edit) of the channel message an edit
    replaces: the thread's user rows whose `meta.message_key` is `message_key`."""
    found: int | None = None
    after: int | None = None
    while True:
        page = await messages.thread_messages(session, thread, after_id=after, limit=200)
        for record in page:
            if record.role == "user" and record.meta.message_key == message_key:
                found = record.id
        if len(page) < 200:
            return found
        after = page[-1].id

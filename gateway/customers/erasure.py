"""Erasing a customer, one episode or one message (LGPD art. 18 / GDPR art. 17).

A customer: one transaction locks the customer and everyone merged into it (a merged
customer's erasure follows the merge: erasing a merged-away id erases the customer it became,
with everyone merged into that one), reads the keys that name them, deletes their rows
(`storage.repositories.erasure`), scrubs the audit rows about them and writes one tombstone
audit row: the customer id, when, who, why and the rows removed per table — no personal data.
After the commit the Redis keys built from what was read go, and every process forgets them
(`forgetting.Forgetting`). A customer who writes again afterwards is a new customer.

Every erasure keeps, in its transaction, a tombstone of each erased message's provider id
(hashed: `storage.repositories.erasure_tombstones`) for `AfterCommit.tombstone_days`, the
providers' longest retry window: a late retry of an erased message (its dedupe key went with
it) is acknowledged and dropped by accept, not stored again as a new customer.

A message or an episode: `storage.repositories.message_erasure` removes it with what was
derived from it; after the commit the summaries of the episodes it touched are rebuilt from
the messages that remain. The audit row names the message ids, never their text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.customers.forgetting import (
    Forgetting,
    delete_keys,
    delete_stream_entries,
    redis_keys,
)
from gateway.http.errors import BadRequest
from gateway.memory.rebuild import rebuild_summaries
from gateway.memory.worker import MemoryWorker
from gateway.runtime.clock import utcnow
from gateway.storage.errors import RecordNotFound
from gateway.storage.records import AuditRecord
from gateway.storage.repositories import (
    audit,
    customers,
    erasure,
    erasure_tombstones,
    message_erasure,
)
from gateway.storage.repositories.message_erasure import MessageErasure

ERASED = "customer.erased"
MESSAGE_ERASED = "message.erased"
EPISODE_ERASED = "episode.erased"
# RELAYDESK_ERASURE_TOMBSTONE_DAYS's default: WhatsApp Cloud retries a webhook for up to 7 days.
TOMBSTONE_DAYS = 7


@dataclass(frozen=True, slots=True)
class Erased:
    """What an erasure removed: its tombstone audit row, the customers erased (the survivor
    first), rows per table, and how many Redis keys went."""

    audit: AuditRecord
    customer_ids: tuple[str, ...]
    counts: dict[str, int] = field(default_factory=dict)
    redis_keys: int = 0
    summaries_rebuilt: int = 0


@dataclass(frozen=True, slots=True)
class AfterCommit:
    """What an erasure does once its transaction committed, and how long its tombstones stay."""

    redis: Redis | None
    forgetting: Forgetting
    # The compaction jobs' stream, whose entries name customers.
    stream: str | None = None
    tombstone_days: int = TOMBSTONE_DAYS

    def tombstones_until(self) -> datetime:
        return utcnow() + timedelta(days=self.tombstone_days)


def _reason(reason: str) -> str:
    if not reason.strip():
        raise BadRequest("an erasure needs a reason", code="reason_required")
    return reason.strip()


async def erase_customer(
    sessions: async_sessionmaker[AsyncSession],
    after: AfterCommit,
    customer_id: str,
    *,
    actor: str,
    reason: str,
) -> Erased:
    """Erase the customer (followed through merges) and everyone merged into it. Raises
    `RecordNotFound` for an unknown (or already erased) customer, changing nothing."""
    why = _reason(reason)
    async with sessions.begin() as session:
        survivor = await customers.surviving_customer(session, customer_id)
        if survivor is None:
            raise RecordNotFound(f"customer {customer_id} not found")
        group = await erasure.absorbed_customers(session, survivor)
        if survivor not in await erasure.lock_customers(session, group):
            raise RecordNotFound(f"customer {customer_id} not found")
        keys = await erasure.customer_keys(session, group)
        counts = await erasure.erase_customers(session, keys)
        await erasure_tombstones.keep(
            session, keys.provider_messages, until=after.tombstones_until()
        )
        tombstone = await audit.record_audit(
            session,
            actor=actor,
            action=ERASED,
            reason=why,
            subject_type="customer",
            subject_id=survivor,
            details={"requested_id": customer_id, "customers": group, "removed": counts},
        )
    deleted = 0
    if after.redis is not None:
        deleted = await delete_keys(
            after.redis, redis_keys(keys.provider_messages, keys.conversation_keys)
        )
        if after.stream is not None:
            deleted += await delete_stream_entries(after.redis, after.stream, group)
    await after.forgetting.announce(group)
    return Erased(tombstone, tuple(group), counts, deleted)


async def erase_message(
    sessions: async_sessionmaker[AsyncSession],
    worker: MemoryWorker,
    after: AfterCommit,
    message_id: int,
    *,
    actor: str,
    reason: str,
) -> Erased:
    """Erase one message (all its versions) and what was derived from it."""
    why = _reason(reason)
    async with sessions.begin() as session:
        erased = await message_erasure.erase_messages(session, [message_id])
        if not erased.message_ids:
            raise RecordNotFound(f"message {message_id} not found")
        await erasure_tombstones.keep(
            session, erased.provider_messages, until=after.tombstones_until()
        )
        entry = await _audit(session, erased, MESSAGE_ERASED, str(message_id), actor, why)
    return await finish_message_erasure(sessions, worker, after, erased, entry)


async def erase_episode(
    sessions: async_sessionmaker[AsyncSession],
    worker: MemoryWorker,
    after: AfterCommit,
    episode_id: str,
    *,
    actor: str,
    reason: str,
) -> Erased:
    """Erase one episode (a chat session, a call with every transcript version)."""
    why = _reason(reason)
    async with sessions.begin() as session:
        erased = await message_erasure.erase_episode(session, episode_id)
        if erased is None:
            raise RecordNotFound(f"episode {episode_id} not found")
        await erasure_tombstones.keep(
            session, erased.provider_messages, until=after.tombstones_until()
        )
        entry = await _audit(session, erased, EPISODE_ERASED, episode_id, actor, why)
    return await finish_message_erasure(sessions, worker, after, erased, entry)


async def _audit(
    session: AsyncSession, erased: MessageErasure, action: str, subject: str, actor: str, why: str
) -> AuditRecord:
    return await audit.record_audit(
        session,
        actor=actor,
        action=action,
        reason=why,
        subject_type="customer",
        subject_id=erased.customer_ids[0],
        details={
            "requested_id": subject,
            "message_ids": list(erased.message_ids),
            "removed": erased.counts,
        },
    )


async def finish_message_erasure(
    sessions: async_sessionmaker[AsyncSession],
    worker: MemoryWorker,
    after: AfterCommit,
    erased: MessageErasure,
    entry: AuditRecord,
) -> Erased:
    """What follows the commit of `message_erasure.erase_messages` (also for a caller that
    erases in batches, such as a retention job): the messages' dedupe keys go, the touched
    episodes' summaries are rebuilt from what remains, every process forgets the customers'
    recall entries."""
    deleted = 0
    if after.redis is not None:
        deleted = await delete_keys(after.redis, redis_keys(erased.provider_messages))
    rebuilt = await rebuild_summaries(sessions, worker, erased.rebuild)
    await after.forgetting.announce(erased.customer_ids)
    return Erased(entry, erased.customer_ids, erased.counts, deleted, rebuilt)

"""Retention: raw messages (phone transcripts included: a call's turns are messages on the
`phone` channel) older than the tenant's `retention_days` are deleted every
`RELAYDESK_RETENTION_INTERVAL_S` (the first time a minute after start), in batches of `BATCH`
messages, each batch its own short transaction (what a batch removes besides:
`gateway.storage.repositories.retention`).

Which settings apply: those of the tenant each message came through (recorded with it at the
edge: domain, host, assistant), with their per-channel overrides (`channels: {"phone":
{"retention_days": …}}`); so retention set on a host level applies to that host's messages
only.

Stopping half-way loses nothing that should stay: every batch picks only messages older than
the cutoff, commits, and the next run starts again from what is left.

Each run also deletes the erasure tombstones that expired (the hashed provider ids of erased
messages, kept for `RELAYDESK_ERASURE_TOMBSTONE_DAYS`: `gateway.customers.erasure`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway import channel_catalog
from gateway.runtime.clock import utcnow
from gateway.runtime.metrics import Metrics
from gateway.runtime.outages import is_storage_down
from gateway.runtime.tasks import TaskOwner, cancel_and_wait
from gateway.storage.repositories import erasure_tombstones, retention, tenants
from gateway.tenant_ref import TenantRef
from identity.channels import ChannelName

log = logging.getLogger("relaydesk.retention")

BATCH: Final = 500
# The first run waits this long after start (or the interval, if shorter): a process that
# restarts more often than the interval still runs retention, just not while it is starting.
FIRST_RUN_AFTER_S: Final = 60.0
# Every channel of the catalog: each tenant's retention applies to all of them.
CHANNELS: Final = channel_catalog.NAMES


@dataclass(frozen=True, slots=True)
class ChannelRetention:
    """Messages of `tenant` on `channel` written before `before` go; `memory_too`: with what
    memory derived from them."""

    tenant: TenantRef
    channel: ChannelName
    before: datetime
    memory_too: bool


async def policies(
    session: AsyncSession, now: datetime, channels: Iterable[ChannelName] = CHANNELS
) -> list[ChannelRetention]:
    """The (tenant, channel) pairs whose messages are not kept forever, with their cutoffs."""
    found = []
    wanted = tuple(channels)
    for tenant in await retention.message_tenants(session):
        for channel in wanted:
            settings = await tenants.settings_for(session, tenant, channel=channel)
            if settings.retention_days is not None:
                before = now - timedelta(days=settings.retention_days)
                found.append(
                    ChannelRetention(tenant, channel, before, settings.retention_covers_memory)
                )
    return found


async def run_retention(
    sessions: async_sessionmaker[AsyncSession],
    *,
    now: datetime | None = None,
    batch: int = BATCH,
    max_batches: int | None = None,
    metrics: Metrics | None = None,
) -> Counter[str]:
    """Delete what retention no longer keeps, batch after batch until none is left (or
    `max_batches` ran); what went, by kind."""
    now = now or utcnow()
    async with sessions() as session:
        found = await policies(session, now)
    total: Counter[str] = Counter()
    batches = 0
    for policy in found:
        while max_batches is None or batches < max_batches:
            async with sessions.begin() as session:
                ids = await retention.expired_message_ids(
                    session,
                    channel=policy.channel,
                    before=policy.before,
                    limit=batch,
                    tenant=policy.tenant,
                )
                removed = await retention.delete_expired(session, ids, memory_too=policy.memory_too)
            batches += 1
            _count(metrics, removed.counts)
            total.update(removed.counts)
            if len(ids) < batch:
                break
    async with sessions.begin() as session:
        purged = Counter(
            {"erasure_tombstones": await erasure_tombstones.purge_expired(session, now=now)}
        )
    _count(metrics, purged)
    total.update(purged)
    return +total


def _count(metrics: Metrics | None, counts: Counter[str]) -> None:
    if metrics is None:
        return
    for kind, value in counts.items():
        if value:
            metrics.retention_deleted.labels(kind).inc(value)


class RetentionSweeper:
    """`run_retention` every `interval_s`, in the processes that run background work."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        interval_s: float,
        metrics: Metrics | None = None,
        clock: Callable[[], datetime] = utcnow,
        owner: TaskOwner | None = None,
    ) -> None:
        self._sessions = sessions
        self._owner = owner if owner is not None else TaskOwner()
        self._interval_s = interval_s
        self._metrics = metrics
        self._clock = clock
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = self._owner.spawn(self._run(), name="retention")

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])

    async def _run(self) -> None:
        await asyncio.sleep(min(self._interval_s, FIRST_RUN_AFTER_S))
        while True:
            try:
                removed = await run_retention(
                    self._sessions, now=self._clock(), metrics=self._metrics
                )
                if removed:
                    log.info("retention ran", extra={"fields": dict(removed)})
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # nothing is lost: the next run starts from what is left
                if is_storage_down(exc):
                    log.warning(
                        "retention postponed, storage is unavailable",
                        extra={"fields": {"error": type(exc).__name__}},
                    )
                else:
                    log.exception("retention failed")
            await asyncio.sleep(self._interval_s)

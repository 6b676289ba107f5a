"""Storing what the inbox holds: claim rows, accept each as a message (identity, episode,
turn), delete them. Runs in every gateway process, after each commit of the writer and on the
periodic sweep (rows a stopped process had claimed come back when their lease runs out).

Accepting is idempotent on (channel, provider message id), so a row processed twice (its
process died before the delete) stores one message; a row naming an erased message (its
tombstone has not expired) is deleted without storing anything. A row that fails for a reason
other than an outage is retried on later claims and, after MAX_ATTEMPTS, kept aside (`dead_at`)
with its error, so one bad row cannot hold its sender's later messages forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import InboundMessage
from gateway.inbox.codec import from_payload, trace_of
from gateway.runtime.clock import utcnow
from gateway.runtime.outages import is_storage_down
from gateway.runtime.tasks import TaskOwner, cancel_and_wait
from gateway.runtime.trace_context import INBOX_STORE_SPAN, continued_span
from gateway.storage.engine import read_sessions
from gateway.storage.records import InboxItem
from gateway.storage.repositories import inbox
from gateway.tenant_ref import TenantRef
from gateway.turns.accept import Accepted, MessageErased, ThreadBlocked

log = logging.getLogger("relaydesk.inbox")

# Rows per claim: stored in one transaction (see `process_claim`); more rows per claim cost
# fewer statements per message, and hold the episodes they write a little longer.
CLAIM_LIMIT = 64
LEASE = timedelta(seconds=30)
MAX_ATTEMPTS = 5
# Claims processed side by side in one process. One: a process stores its claims in inbox order
# (across senders too); more processes, more claims at once, each sender's rows still in order.
TASKS = 1


class InboxProcessor:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        accept: Callable[[InboundMessage, TenantRef], Awaitable[Accepted]],
        *,
        stored: Callable[[str], None],
        pause: Callable[[], Awaitable[None]] | None = None,
        tasks: int = TASKS,
        lease: timedelta = LEASE,
        owner: TaskOwner | None = None,
    ) -> None:
        """`accept` stores one message (see `process_claim` for how it is called);
        `stored(conversation_key)` is told of each new one; `pause` is awaited before each
        claim's rows (it yields to acknowledgements)."""
        self._sessions = sessions
        self._reads = read_sessions(sessions)
        self._accept = accept
        self._stored = stored
        self._pause = pause
        self._max_tasks = tasks
        self._lease = lease
        self._owner = owner if owner is not None else TaskOwner()
        self._tasks: set[asyncio.Task[None]] = set()
        self._again = False
        self._claiming = asyncio.Lock()  # one claim at a time here (SQLite has no advisory lock)
        self._closed = False

    def kick(self) -> None:
        """Rows were committed or may be claimable: process them in the background."""
        if self._closed:
            return
        self._again = True
        if len(self._tasks) < self._max_tasks:
            task = self._owner.spawn(self._run(), name="inbox-processor")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self) -> None:
        try:
            while self._again:
                self._again = False
                while await self._claim_again():
                    pass
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the rows stay; the sweep kicks again
            if is_storage_down(exc):
                log.warning(
                    "inbox processing postponed, storage is unavailable",
                    extra={"fields": {"error": type(exc).__name__}},
                )
            else:
                log.exception("inbox processing failed")
        finally:
            # Not counted as running from here on: a kick between this last look at `_again`
            # and the end of the task (its done callbacks run later) starts a new one, instead
            # of being lost until the sweep.
            task = asyncio.current_task()
            if task is not None:
                self._tasks.discard(task)

    async def process_waiting(self) -> int:
        """Process claimable rows until none is left; how many were stored or settled."""
        total = 0
        while count := await self.process_claim():
            total += count
        return total

    async def _claim_again(self) -> bool:
        """Process a claim; whether another may find rows. A claim short of the limit took
        every claimable row, so no empty claim is run to confirm it: a row committed after it
        comes with a kick of its own. Rows it released (a failure) are claimable again."""
        claimed, released = await self._process_claim()
        return claimed >= CLAIM_LIMIT or released

    async def process_claim(self) -> int:
        """Claim one batch and process it; how many rows it claimed (0: none was claimable)."""
        claimed, _ = await self._process_claim()
        return claimed

    async def _process_claim(self) -> tuple[int, bool]:
        """Claim one batch and process it: (rows claimed, whether any was released unstored).

        The batch's rows are handed to `accept` all at once, in claim order (one call per row,
        started together): the inbox's `Acceptor` stores rows started together in one
        transaction, keeping each sender's order, and refuses a sender's later rows after one
        failed (`ThreadBlocked`). A row whose payload cannot be read holds its sender's later
        rows back in the same way."""
        async with self._claiming:
            now = utcnow()
            # Every process is woken for a commit that one of them claims: the others look
            # first, for a round trip instead of a claim's transaction.
            async with self._reads() as session:
                if not await inbox.claimable(session, now=now):
                    return 0, False
            async with self._sessions.begin() as session:
                items = await inbox.claim(session, now=now, lease=self._lease, limit=CLAIM_LIMIT)
        if not items:
            return 0, False
        done: list[int] = []
        blocked: set[str] = set()  # a sender whose earlier row failed: its later rows wait
        try:
            if self._pause is not None:
                await self._pause()
            readable: list[tuple[InboxItem, InboundMessage]] = []
            for item in items:
                if item.thread_key in blocked:
                    continue
                try:
                    readable.append((item, from_payload(item.payload)))
                except Exception as exc:
                    await self._failed(item, exc)
                    blocked.add(item.thread_key)
            outcomes = await asyncio.gather(
                *(self._store(item, message) for item, message in readable),
                return_exceptions=True,
            )
            for (item, _), outcome in zip(readable, outcomes, strict=True):
                if item.thread_key in blocked:
                    continue
                if isinstance(outcome, Accepted):
                    done.append(item.id)
                    if not outcome.duplicate:
                        self._stored(outcome.conversation_key)
                    continue
                if isinstance(outcome, MessageErased):
                    # A provider's late retry of an erased message: acknowledged, now dropped.
                    done.append(item.id)
                    log.info(
                        "late retry of an erased message dropped",
                        extra={"fields": {"inbox_id": item.id}},
                    )
                    continue
                blocked.add(item.thread_key)
                if isinstance(outcome, ThreadBlocked):
                    continue  # not tried: released with the others left
                if not isinstance(outcome, Exception) or is_storage_down(outcome):
                    raise outcome  # a shutdown, or an outage: the rows left are released
                await self._failed(item, outcome)
        finally:
            # Released even when an outage or a shutdown stops the batch, where the database
            # allows; otherwise the lease runs out and the rows are claimed again.
            left = [i.id for i in items if i.id not in done]
            await self._settle(done, left)
        return len(items), bool(left)

    async def _store(self, item: InboxItem, message: InboundMessage) -> Accepted:
        """`accept` under a span continuing the webhook's trace, when it was traced: the
        stored message keeps that span's context for its turn."""
        with continued_span(
            INBOX_STORE_SPAN,
            trace_of(item.payload),
            attributes={"relaydesk.inbox_id": item.id, "relaydesk.channel": message.channel},
        ):
            return await self._accept(message, item.tenant)

    async def _settle(self, done: list[int], left: list[int]) -> None:
        try:
            async with self._sessions.begin() as session:
                await inbox.remove(session, done)
                await inbox.release(session, left)
        except Exception as exc:
            if not is_storage_down(exc):
                raise
            # Stored messages whose rows stay are found to be duplicates when claimed again.

    async def _failed(self, item: InboxItem, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {exc}"
        fields = {"inbox_id": item.id, "attempts": item.attempts, "error": error[:500]}
        async with self._sessions.begin() as session:
            if item.attempts >= MAX_ATTEMPTS:
                await inbox.bury(session, item.id, error=error, now=utcnow())
                log.error(
                    "inbox row kept aside after repeated failures (%s)",
                    type(exc).__name__,
                    extra={"fields": fields},
                )
            else:
                await inbox.release(session, [item.id], error=error)
                # The error's class in the text too: a test run prints messages, not fields.
                log.warning(
                    "inbox row failed (%s), retried later",
                    type(exc).__name__,
                    extra={"fields": fields},
                )

    async def idle(self) -> None:
        """Wait until no background processing runs (tests and shutdown use this)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        self._closed = True
        await cancel_and_wait(list(self._tasks))

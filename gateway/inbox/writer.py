"""Group commit: the webhooks that arrive while a commit is running are written together by
the next one, so a burst costs a few commits instead of one per message."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import InboundMessage
from gateway.inbox.codec import to_payload
from gateway.runtime.tasks import TaskOwner, cancel_and_wait
from gateway.runtime.trace_context import current_carrier
from gateway.storage.repositories import inbox
from gateway.tenant_ref import TenantRef
from gateway.turns.accept import thread_key

MAX_BATCH_ROWS = 500
CLOSE_WAIT_S = 10.0


class InboxWriter:
    """`put` returns once the messages are committed (durable); it raises what the commit
    raised, so the webhook answers 503 and the provider retries."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        committed: Callable[[], None] = lambda: None,
        max_batch_rows: int = MAX_BATCH_ROWS,
        owner: TaskOwner | None = None,
    ) -> None:
        self._sessions = sessions
        self._committed = committed
        self._max = max_batch_rows
        self._owner = owner if owner is not None else TaskOwner()
        self._queued: deque[tuple[list[dict[str, Any]], asyncio.Future[None]]] = deque()
        self._flusher: asyncio.Task[None] | None = None
        self.commits = 0  # statements written, for tests and metrics

    async def put(self, messages: Sequence[InboundMessage], *, tenant: TenantRef) -> None:
        if not messages:
            return
        trace = current_carrier()  # the webhook's server span (None when tracing is off)
        rows = [
            inbox.inbox_row(
                channel=m.channel,
                provider_message_id=m.provider_message_id,
                thread_key=thread_key(m.channel, m.sender),
                tenant=tenant,
                payload=to_payload(m, trace),
                received_at=m.received_at,
            )
            for m in messages
        ]
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queued.append((rows, done))
        if self._flusher is None or self._flusher.done():
            self._flusher = self._owner.spawn(self._flush(), name="inbox-writer")
        # Shielded: a client that hangs up does not cancel the commit the others wait for.
        await asyncio.shield(done)

    async def _flush(self) -> None:
        while self._queued:
            batch: list[tuple[list[dict[str, Any]], asyncio.Future[None]]] = []
            count = 0
            while self._queued and (not batch or count + len(self._queued[0][0]) <= self._max):
                rows, done = self._queued.popleft()
                batch.append((rows, done))
                count += len(rows)
            try:
                async with self._sessions.begin() as session:
                    await inbox.add(session, [row for rows, _ in batch for row in rows])
            except Exception as exc:  # every waiter answers with it (503 when storage is down)
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
                        done.exception()  # retrieved: a waiter that hung up logs nothing
                continue
            self.commits += 1
            for _, done in batch:
                if not done.done():
                    done.set_result(None)
            self._committed()

    async def close(self) -> None:
        """Let the running commit finish (its waiters get their answer), then stop."""
        if self._flusher is not None and not self._flusher.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._flusher), CLOSE_WAIT_S)
            except TimeoutError:
                await cancel_and_wait([self._flusher])
        while self._queued:
            _, done = self._queued.popleft()
            if not done.done():
                done.set_exception(ConnectionError("the gateway is stopping"))  # 503: retry
                done.exception()

"""Waking the background processes from the gateway processes, over Redis.

Under `relaydesk serve --workers N` the N gateway processes only acknowledge: they commit
webhooks to the inbox and store web chat messages, then send a wake-up. The background
processes, at a lower CPU priority, kick their inbox processor or their scheduler:

- `inbox` (rows to store) goes to one background process, the first idle one: it is pushed on
  a short Redis list that each background process pops only while its inbox processor is idle.
  Every process woken for every commit would all run a claim, and all but one find nothing.
  The list keeps at most `PENDING_INBOX` wake-ups: one claim takes every claimable row, so more
  would only wake processes for nothing.
- `turn:<conversation key>` (a turn to answer) is published on a pub/sub channel to all.

A wake-up lost while Redis is away costs only delay: the background process's periodic sweep
finds the rows and turns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis

from gateway.coordination.pubsub import RETRY_MAX_S, RETRY_MIN_S, Channel
from gateway.runtime.tasks import TaskOwner, cancel_and_wait

log = logging.getLogger("relaydesk.wakeups")

CHANNEL = "relaydesk:wakeups"
INBOX = "inbox"
TURN_PREFIX = "turn:"
PENDING_INBOX = 2
# Under the client's socket timeout (5 s), so a pop that waits is never cut as a stalled read.
POP_WAIT_S = 2


class Wakeups:
    def __init__(
        self, redis: Redis, channel: str = CHANNEL, *, owner: TaskOwner | None = None
    ) -> None:
        self._redis = redis
        self._owner = owner if owner is not None else TaskOwner()
        self._channel = Channel(redis, channel, log=log, what="background wake-up", owner=owner)
        self._inbox_key = f"{channel}:inbox"
        self._pushing: set[asyncio.Task[None]] = set()
        self._push_running = False  # an inbox wake-up is on its way
        self._push_again = False  # and another commit came since it left
        self._popping: asyncio.Task[None] | None = None
        self.subscribed = self._channel.subscribed

    def inbox(self) -> None:
        """Rows were committed to the inbox: one idle background process is to claim them.

        Commits while a wake-up is on its way share the one push that follows it: every
        commit still has a wake-up pushed after it, and a burst of commits costs a few round
        trips to Redis instead of one each."""
        if self._push_running:
            self._push_again = True
            return
        self._push_running, self._push_again = True, False
        # Not awaited by the caller: a request never waits for the wake-up.
        task = asyncio.create_task(self._push_until_caught_up(), name="inbox wake-up")
        self._pushing.add(task)
        task.add_done_callback(self._pushing.discard)

    async def _push_until_caught_up(self) -> None:
        try:
            while True:
                await self._push()
                if not self._push_again:
                    return
                self._push_again = False
        finally:
            # Cleared before the task ends, not by its done callback: a commit in between
            # would find a push "running" that never looks at its flag again.
            self._push_running = False

    async def _push(self) -> None:
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.lpush(self._inbox_key, INBOX)
                pipe.ltrim(self._inbox_key, 0, PENDING_INBOX - 1)
                await pipe.execute()
        except Exception as exc:
            log.warning("inbox wake-up not sent", extra={"fields": {"error": type(exc).__name__}})

    def turn(self, conversation_key: str) -> None:
        """A turn of this conversation is pending."""
        self._channel.publish(TURN_PREFIX + conversation_key)

    def listen(
        self,
        *,
        inbox: Callable[[], None],
        turn: Callable[[str], None],
        inbox_idle: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Call `turn(key)` for each turn wake-up sent by any process, and `inbox()` for the
        inbox wake-ups this process takes: one at a time, each once `inbox_idle()` returns (the
        inbox processor has nothing running), so that a busy process leaves them to an idle
        one."""

        async def handle(data: object) -> None:
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
            if text == INBOX:
                inbox()  # published by a gateway of the previous version
            elif text.startswith(TURN_PREFIX) and len(text) > len(TURN_PREFIX):
                turn(text[len(TURN_PREFIX) :])

        self._channel.listen(handle)
        self._popping = self._owner.spawn(
            self._pop_forever(inbox, inbox_idle), name="inbox wake-up listener"
        )

    async def _pop_forever(
        self, inbox: Callable[[], None], idle: Callable[[], Awaitable[None]] | None
    ) -> None:
        delay = RETRY_MIN_S
        while True:
            if idle is not None:
                await idle()
            try:
                popped = await self._redis.blpop([self._inbox_key], timeout=POP_WAIT_S)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning(
                    "inbox wake-ups unavailable",
                    extra={"fields": {"error": type(exc).__name__, "retry_in_s": delay}},
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            delay = RETRY_MIN_S
            if popped is not None:
                inbox()

    async def close(self) -> None:
        tasks = list(self._pushing)
        if self._popping is not None:
            tasks.append(self._popping)
        await cancel_and_wait(tasks)
        await self._channel.close()

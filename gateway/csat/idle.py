"""The idle sweep: every `INTERVAL_S`, conversations the bot answers that have been silent for
their tenant's `episode_idle_minutes` (their episode closes with the next message) are asked
the satisfaction question, once per episode, by the rules of `gateway.csat.asking`.

Only conversations whose last message is less than a day old are looked at: the WhatsApp
window is closed after that anyway, and switching the survey on does not write to everyone
who ever wrote. Runs where the rest of the background work does, through the one task owner.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from gateway.csat.asking import Asker, ask
from gateway.csat.rules import Trigger
from gateway.runtime.clock import utcnow
from gateway.runtime.outages import is_storage_down
from gateway.runtime.tasks import TaskOwner, cancel_and_wait
from gateway.storage.repositories import csat

log = logging.getLogger("relaydesk.csat")

INTERVAL_S = 60.0
LOOK_BACK = timedelta(hours=24)
SHORTEST_IDLE = timedelta(minutes=1)  # `episode_idle_minutes` is at least 1


class IdleSurveys:
    def __init__(
        self,
        asker: Asker,
        *,
        owner: TaskOwner,
        interval_s: float = INTERVAL_S,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._asker = asker
        self._owner = owner
        self._interval_s = interval_s
        self._clock = clock
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = self._owner.spawn(self._run(), name="csat-idle")

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])

    async def sweep(self) -> int:
        """Ask the idle conversations due a question; how many were asked."""
        now = self._clock()
        async with self._asker.sessions() as session:
            idle = await csat.idle_with_the_bot(
                session, since=now - LOOK_BACK, before=now - SHORTEST_IDLE
            )
        asked = 0
        for conversation in idle:
            if await ask(self._asker, conversation.id, Trigger.IDLE_CLOSE, now=now):
                asked += 1
        return asked

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                asked = await self.sweep()
                if asked:
                    log.info("csat asked after idle", extra={"fields": {"asked": asked}})
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the next sweep looks again
                if is_storage_down(exc):
                    log.warning("csat sweep postponed, storage is unavailable")
                else:
                    log.exception("csat sweep failed")

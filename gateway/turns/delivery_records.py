"""What each send did, written in groups: one transaction for the sends that ended while the
previous group was being written.

Under load many conversations' replies leave at once; writing each outcome (the turn's
delivery status, the provider ids of what was sent) in a transaction of its own costs a
transaction per reply. Here a send waits for its outcome to be committed, as before, but the
outcomes that arrive while a write is under way go together in the next one. With one send at
a time nothing waits longer than its own write.

A group that fails is written again one outcome at a time, so one bad row fails only its own
send. A group the database cannot take (an outage) is tried again for up to
`OUTAGE_PATIENCE_S`: the provider has the message, and a send left unrecorded would go again
once its lease runs out (the send waits meanwhile, holding its conversation).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.runtime.outages import is_storage_down
from gateway.runtime.tasks import TaskOwner
from gateway.storage.repositories import outbound, turns
from gateway.storage.repositories.outbound import SentPart
from gateway.storage.updates import DeliveryOutcome
from gateway.turns.delivery import refused_before_recorded

log = logging.getLogger("relaydesk.deliver")

# How long the outcomes of sends are kept trying through a database outage, and the first wait.
OUTAGE_PATIENCE_S = 60.0
FIRST_RETRY_S = 0.25


@dataclass(frozen=True, slots=True)
class SendOutcome:
    """A turn's delivery attempt, and the parts the provider accepted."""

    turn_id: int
    delivery: DeliveryOutcome
    parts: tuple[SentPart, ...] = field(default=())


class DeliveryRecords:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], *, owner: TaskOwner | None = None
    ) -> None:
        self._sessions = sessions
        self._owner = owner if owner is not None else TaskOwner()
        self._waiting: list[tuple[SendOutcome, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def record(self, outcome: SendOutcome) -> None:
        """Return once the outcome is committed (raise if it could not be)."""
        done = asyncio.get_running_loop().create_future()
        self._waiting.append((outcome, done))
        if self._writer is None or self._writer.done():
            self._writer = self._owner.spawn(self._write_waiting(), name="delivery-records")
        # A cancelled send leaves its outcome to be written with the others.
        await asyncio.shield(done)

    async def close(self) -> None:
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)

    async def _write_waiting(self) -> None:
        group: list[tuple[SendOutcome, asyncio.Future[None]]] = []
        try:
            while self._waiting:
                group, self._waiting = self._waiting, []
                await self._write_group(group)
        except BaseException as exc:  # cancelled (a shutdown): no send waits forever
            for _, done in group + self._waiting:
                _settle(done, exc)
            self._waiting = []
            raise

    async def _write_group(self, group: list[tuple[SendOutcome, asyncio.Future[None]]]) -> None:
        try:
            await self._write_through_outage([outcome for outcome, _ in group])
        except Exception as exc:
            if len(group) == 1:
                _settle(group[0][1], exc)
                return
            for outcome, done in group:
                try:
                    await self._write([outcome])
                except Exception as single:
                    _settle(done, single)
                else:
                    _settle(done, None)
            return
        for _, done in group:
            _settle(done, None)

    async def _write_through_outage(self, outcomes: Sequence[SendOutcome]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + OUTAGE_PATIENCE_S
        wait = FIRST_RETRY_S
        while True:
            try:
                await self._write(outcomes)
                return
            except Exception as exc:
                if not is_storage_down(exc) or loop.time() + wait > deadline:
                    raise
                log.warning(
                    "send outcomes not recorded yet, the database is unavailable",
                    extra={"fields": {"sends": len(outcomes), "error": type(exc).__name__}},
                )
            await asyncio.sleep(wait)
            wait = min(wait * 2, 5.0)

    async def _write(self, outcomes: Sequence[SendOutcome]) -> None:
        async with self._sessions.begin() as session:
            await turns.record_deliveries(
                session, [(outcome.turn_id, outcome.delivery) for outcome in outcomes]
            )
            recorded = await outbound.record_parts(
                session, [part for outcome in outcomes for part in outcome.parts]
            )
            await refused_before_recorded(session, recorded)


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)

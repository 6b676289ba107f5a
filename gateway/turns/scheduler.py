"""Background turn processing: one drain task per conversation, every task tracked.

`kick(key)` after a message is stored; a kick while the conversation is draining makes the
drain look again before it stops. A periodic sweep resumes conversations whose turns are
still pending (after a crash, a restart, or a failed attempt), so an accepted message is
always answered eventually.

At most `max_active` conversations drain at once in a process; the others wait their turn. A
drain spends most of its time waiting on the model, so the bound is high (the model
concurrency, `RELAYDESK_MODEL_CONCURRENCY`); the steps of a drain that use the CPU are bounded
separately by the answer step's work slots, so answering many conversations at once never
takes the time the acknowledgements need.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from gateway.coordination.locks import LockTimeout
from gateway.providers.limits import DEFAULT_MODEL_CONCURRENCY
from gateway.runtime.outages import is_storage_down
from gateway.runtime.tasks import TaskOwner, cancel_and_wait

log = logging.getLogger("relaydesk.scheduler")

MAX_ACTIVE = DEFAULT_MODEL_CONCURRENCY


class TurnScheduler:
    def __init__(
        self,
        drain: Callable[[str], Awaitable[int]],
        pending: Callable[[], Awaitable[list[str]]],
        *,
        redeliver: Callable[[], Awaitable[int]] | None = None,
        sweep_every_s: float = 15.0,
        max_active: int = MAX_ACTIVE,
        hand_off: Callable[[str], None] | None = None,
        intake: Callable[[], None] | None = None,
        owner: TaskOwner | None = None,
    ) -> None:
        """`hand_off`: this process answers nothing; each kick is passed to it instead (the
        background process answers). `intake` is also kicked on every sweep (messages
        acknowledged but not yet stored)."""
        if max_active < 1:
            raise ValueError("max_active must be at least 1")
        self._drain = drain
        self._pending = pending
        self._redeliver = redeliver
        self._sweep_every_s = sweep_every_s
        self._running: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._closed = False
        self._slots = asyncio.Semaphore(max_active)
        self.active = 0  # drains running now (not waiting for a slot)
        self._intake = intake
        self._hand_off = hand_off
        self._owner = owner if owner is not None else TaskOwner()

    def start(self) -> None:
        if self._hand_off is not None:
            return  # the background process sweeps
        self._sweeper = self._owner.spawn(self._sweep_forever(), name="turn-sweeper")

    def kick(self, key: str) -> None:
        if self._closed:
            return
        if self._hand_off is not None:
            self._hand_off(key)
            return
        if key in self._running:
            self._again.add(key)
            return
        self._running[key] = self._owner.spawn(self._run(key), name=f"drain:{key}")

    async def _run(self, key: str) -> None:
        try:
            while True:
                async with self._slots:
                    # Kicks until here are covered by this drain, which reads what is pending.
                    self._again.discard(key)
                    self.active += 1
                    try:
                        await self._drain(key)
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:
                        # The turn stays pending; the sweep retries it later.
                        if is_storage_down(exc) or isinstance(exc, LockTimeout):
                            log.warning(
                                "drain postponed, a dependency is unavailable",
                                extra={
                                    "fields": {"conversation": key, "error": type(exc).__name__}
                                },
                            )
                        else:
                            log.exception("drain failed", extra={"fields": {"conversation": key}})
                        return
                    finally:
                        self.active -= 1
                if key not in self._again:
                    return
        finally:
            self._running.pop(key, None)

    async def sweep(self) -> None:
        if self._intake is not None:
            self._intake()
        for key in await self._pending():
            self.kick(key)
        if self._redeliver is not None:
            await self._redeliver()

    async def _sweep_forever(self) -> None:
        while True:
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("sweep failed")
            await asyncio.sleep(self._sweep_every_s)

    async def idle(self) -> None:
        """Wait until no conversation is draining (tests and the demo use this)."""
        while self._running:
            await asyncio.gather(*list(self._running.values()), return_exceptions=True)

    async def close(self) -> None:
        self._closed = True
        tasks = list(self._running.values())
        if self._sweeper is not None:
            tasks.append(self._sweeper)
        await cancel_and_wait(tasks)

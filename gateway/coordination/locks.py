"""Per-conversation mutual exclusion: one turn of a conversation at a time.

In-process (default): an `asyncio.Lock` per conversation; it cannot expire, so no fencing is
needed (`fence` is None). Redis: `SET NX PX` with a renewal watchdog and a fencing token from a
per-conversation counter; a holder whose lock expired mid-turn keeps running but its token is
older than the new holder's, and the database refuses its writes (`turns.claim_fence`). A
refused `try_hold` leaves a note the holder reads as it lets go (`Held.sought`): another drain
left its turn to this holder, which looks for pending turns again only then.

With Redis down a lock cannot be taken: `hold` raises, the drain stops and the turn stays
pending for the scheduler's sweep, so the reply comes once Redis is back. An outage while the
lock is held is not an error of the turn: renewal keeps trying, and a release that fails leaves
the lock to expire (the fence already guards the writes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.runtime.tasks import cancel_and_wait

log = logging.getLogger("relaydesk.locks")

# A fencing counter kept after its conversation's last turn: far longer than any lock lives,
# so a writer's token is never reused while it may still write.
FENCE_TTL_MS = 7 * 24 * 3600 * 1000


@dataclass(slots=True)
class Sought:
    """Whether another holder looked for the lock while it was held, known once it is let go;
    True until then, and whenever it cannot be known (an in-process lock, a failed release)."""

    meanwhile: bool = True


@dataclass(frozen=True, slots=True)
class Held:
    key: str
    fence: int | None
    sought: Sought = field(default_factory=Sought, compare=False)


class ConversationLocks(Protocol):
    def hold(self, key: str, *, floor: int = 0) -> contextlib.AbstractAsyncContextManager[Held]:
        """Hold the conversation's lock; `floor` is the last fence the database saw."""
        ...

    def try_hold(
        self, key: str, *, floor: int = 0
    ) -> contextlib.AbstractAsyncContextManager[Held | None]:
        """Hold the lock if nobody holds it now, else None at once (the holder sees the work)."""
        ...


class InProcessLocks:
    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str, *, floor: int = 0) -> AsyncIterator[Held]:
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield Held(key, None)
        finally:
            self._users[key] -= 1
            if self._users[key] == 0:  # forget idle conversations
                del self._users[key]
                self._locks.pop(key, None)

    @contextlib.asynccontextmanager
    async def try_hold(self, key: str, *, floor: int = 0) -> AsyncIterator[Held | None]:
        lock = self._locks.get(key)
        if lock is not None and lock.locked():
            yield None
            return
        async with self.hold(key, floor=floor) as held:
            yield held


# Take the lock, or find it ours already (an acquire retried after its reply was lost, a dropped
# connection, must not wait for itself); once held, raise the fence counter to the database's
# floor (after a Redis restart) and take the next token. One round trip: 0 when another holds it
# (and the holder is told so at its release: KEYS[3]), else the token (at least 1). A quiet
# conversation's counter expires (ARGV[4]): the next drain raises it to the database's floor.
_TAKE = """
local taken = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  taken = redis.call('PEXPIRE', KEYS[1], ARGV[2])
elseif redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  taken = 1
end
if taken == 0 then
  redis.call('SET', KEYS[3], '1', 'PX', ARGV[2])
  return 0
end
redis.call('DEL', KEYS[3])
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if current < tonumber(ARGV[3]) then redis.call('SET', KEYS[2], ARGV[3]) end
local fence = redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return fence
"""
# Let go of the lock if still ours: 2 when it was sought meanwhile, 1 when not, 0 when it was no
# longer ours (expired: unknown).
_RELEASE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('DEL', KEYS[2]) == 1 then return 2 end
return 1
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


class LockTimeout(Exception):
    pass


class RedisLocks:
    def __init__(
        self,
        redis: Redis,
        *,
        ttl_ms: int = 30_000,
        renew: bool = True,
        wait_s: float = 300.0,
        prefix: str = "relaydesk",
    ) -> None:
        self._redis = redis
        self._ttl_ms = ttl_ms
        self._renew = renew
        self._wait_s = wait_s
        self._prefix = prefix
        # Sent by digest (EVALSHA), the body only when Redis lost it (a restart).
        self._take = redis.register_script(_TAKE)
        self._release_script = redis.register_script(_RELEASE)
        self._renew_script = redis.register_script(_RENEW)

    @contextlib.asynccontextmanager
    async def hold(self, key: str, *, floor: int = 0) -> AsyncIterator[Held]:
        owner = secrets.token_hex(16)
        lock_key = self._lock_key(key)
        fence = await self._acquire(key, owner, floor)
        async with self._holding(key, lock_key, owner, fence) as held:
            yield held

    @contextlib.asynccontextmanager
    async def try_hold(self, key: str, *, floor: int = 0) -> AsyncIterator[Held | None]:
        owner = secrets.token_hex(16)
        fence = await self._try_take(key, owner, floor)
        if not fence:
            yield None
            return
        async with self._holding(key, self._lock_key(key), owner, fence) as held:
            yield held

    def _lock_key(self, key: str) -> str:
        return f"{self._prefix}:lock:{key}"

    def _sought_key(self, key: str) -> str:
        return f"{self._prefix}:sought:{key}"

    async def _try_take(self, key: str, owner: str, floor: int) -> int:
        """The fencing token if `owner` holds the lock now, else 0."""
        keys = [self._lock_key(key), f"{self._prefix}:fence:{key}", self._sought_key(key)]
        args: list[str | int] = [owner, self._ttl_ms, floor, FENCE_TTL_MS]
        return int(await self._take(keys=keys, args=args))

    @contextlib.asynccontextmanager
    async def _holding(
        self, key: str, lock_key: str, owner: str, fence: int
    ) -> AsyncIterator[Held]:
        """The lock just taken by `owner` with its fencing token: renewal, and release."""
        released = asyncio.Event()
        watchdog = (
            asyncio.create_task(self._keep(lock_key, owner, released)) if self._renew else None
        )
        held = Held(key, fence)
        try:
            yield held
        finally:
            released.set()
            try:
                if watchdog is not None:
                    # Cancelled until it ends, and it also stops by itself once released: a
                    # Redis call can end in an error instead of the cancellation (seen under
                    # load), and a watchdog that lived on renewed the lock for good while this
                    # holder waited for it, the conversation left unanswered.
                    await cancel_and_wait([watchdog])
            finally:
                held.sought.meanwhile = await self._release(lock_key, owner, key)

    async def _acquire(self, key: str, owner: str, floor: int) -> int:
        delay = 0.005
        deadline = asyncio.get_running_loop().time() + self._wait_s
        while not (fence := await self._try_take(key, owner, floor)):
            if asyncio.get_running_loop().time() > deadline:
                raise LockTimeout(f"could not lock {self._lock_key(key)} within {self._wait_s}s")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)
        return fence

    async def _release(self, lock_key: str, owner: str, key: str) -> bool:
        """Let go of the lock; whether it was sought meanwhile (True when unknown)."""
        try:
            outcome = await self._release_script(
                keys=[lock_key, self._sought_key(key)], args=[owner]
            )
        except (RedisError, OSError) as exc:
            log.warning(
                "lock not released, it expires",
                extra={"fields": {"lock": lock_key, "error": type(exc).__name__}},
            )
            return True
        return int(outcome) != 1

    async def _keep(self, lock_key: str, owner: str, released: asyncio.Event) -> None:
        while not released.is_set():
            await asyncio.sleep(self._ttl_ms / 3000)
            if released.is_set():
                return
            try:
                renewed = await self._renew_script(keys=[lock_key], args=[owner, self._ttl_ms])
            except (RedisError, OSError):
                continue  # Redis unreachable: try again; the fence guards the writes meanwhile
            if not renewed:
                return  # lost it: the fence will refuse this holder's writes

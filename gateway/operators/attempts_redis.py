"""The login attempt ledger in Redis: a sorted set of attempt times per client address, per
(account, address) and per account, each pruned, counted, judged and added to by one Lua
script (atomic in Redis), with the rule of `throttle` passed in. A flood of refused attempts
then never reaches the database.

With Redis unreachable an attempt is counted in the database instead (`fallback`): logins keep
working, and each store's own count still holds its limit.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.operators import throttle
from gateway.operators.attempts import AttemptLedger, Refused, Reservation

log = logging.getLogger("relaydesk.logins")

# KEYS: the address's, the (account, address)'s and the account's sets. ARGV: now, window,
# first wait, longest wait (ms), free failures, guarded free failures, the guard, the member,
# and the window's start as an exclusive bound ("(" + ms). Returns 0 when the attempt was
# counted, else how many ms it must wait.
_RESERVE = """
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local first, longest = tonumber(ARGV[3]), tonumber(ARGV[4])
for _, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[9])
end
local function wait(key, free)
  local count = redis.call('ZCARD', key)
  if count < free then return 0 end
  local latest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
  local span = math.min(first * 2 ^ math.min(count - free, 16), longest)
  return math.max(latest + span - now, 0)
end
local pair_free = tonumber(ARGV[5])
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[7]) then pair_free = tonumber(ARGV[6]) end
local remaining = math.max(wait(KEYS[1], tonumber(ARGV[5])), wait(KEYS[2], pair_free))
if remaining > 0 then return math.ceil(remaining) end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now, ARGV[8])
  redis.call('PEXPIRE', key, window)
end
return 0
"""
# KEYS: as above; the pair's attempts leave all three sets (the throttle keeps them few).
_FORGIVE = """
local members = redis.call('ZRANGE', KEYS[2], 0, -1)
if #members > 0 then
  redis.call('ZREM', KEYS[1], unpack(members))
  redis.call('ZREM', KEYS[3], unpack(members))
end
return redis.call('DEL', KEYS[2])
"""


def _ms(value: timedelta) -> int:
    return int(value.total_seconds() * 1000)


def _keys(prefix: str, account: str, client: str) -> tuple[str, str, str]:
    # The account name is the user's input: hashed, so a key is short and plain.
    tried = hashlib.sha256(account.encode()).hexdigest()[:32]
    return (
        f"{prefix}:client:{client}",
        f"{prefix}:pair:{tried}:{client}",
        f"{prefix}:account:{tried}",
    )


@dataclass(frozen=True, slots=True)
class _RedisReservation:
    redis: Redis
    keys: tuple[str, str, str]

    async def forgive(self) -> None:
        try:
            await self.redis.eval(_FORGIVE, 3, *self.keys)
        except RedisError as exc:
            # Left to expire with the window: the operator is in, the count is only high.
            log.warning("login attempts not forgiven in Redis: %s", exc)


@dataclass(frozen=True, slots=True)
class RedisLedger:
    redis: Redis
    fallback: AttemptLedger
    # RELAYDESK_LOGIN_ATTEMPTS_PREFIX
    prefix: str = "relaydesk:login"

    async def reserve(self, account: str, client: str, now: datetime) -> Reservation | Refused:
        keys = _keys(self.prefix, account, client)
        now_ms = int(now.timestamp() * 1000)
        try:
            wait_ms = await self.redis.eval(
                _RESERVE,
                3,
                *keys,
                now_ms,
                _ms(throttle.WINDOW),
                _ms(throttle.FIRST_WAIT),
                _ms(throttle.MAX_WAIT),
                throttle.FREE_FAILURES,
                throttle.GUARDED_FREE_FAILURES,
                throttle.ACCOUNT_GUARD,
                secrets.token_hex(8),
                f"({now_ms - _ms(throttle.WINDOW)}",
            )
        except RedisError as exc:
            log.warning("login attempts counted in the database, Redis failed: %s", exc)
            return await self.fallback.reserve(account, client, now)
        if int(wait_ms) > 0:
            return Refused(timedelta(milliseconds=int(wait_ms)))
        return _RedisReservation(self.redis, keys)

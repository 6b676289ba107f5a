"""What compaction did during a ``relaydesk bench reply`` run, and tidying its jobs away.

Compactions are counted as compaction traces: every compaction that changes memory writes one,
in the transaction that advances the summary. Jobs are the entries the gateways added to the
shared compaction stream for this run's customers; they are deleted (and acknowledged) at the
end, so that no consumer of the same Redis later picks up a job whose database is gone; so are
the keys the gateways set for the run's webhooks and conversations (replay detection, lock
fencing counters), which would otherwise outlive the database by a week or for good.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, cast

from redis.asyncio import Redis
from redis.exceptions import ResponseError
from sqlalchemy import BindParameter, bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.memory.queue import GROUP, STREAM

_BATCH = 1_000


@dataclass(frozen=True, slots=True)
class Stored:
    customers: int  # in the whole database
    episodes: int  # of the customers asked about, and below too
    compactions: int
    tokens_compacted: int
    compaction_ms: int  # the compactions' own durations, added up


async def stored(
    sessions: async_sessionmaker[AsyncSession], customer_ids: Collection[str]
) -> Stored:
    ids = {"ids": list(customer_ids)}
    expanding: BindParameter[list[str]] = bindparam("ids", expanding=True)
    async with sessions() as session:
        customers = await session.scalar(text("SELECT count(*) FROM customers"))
        episodes = await session.scalar(
            text("SELECT count(*) FROM episodes WHERE customer_id IN :ids").bindparams(expanding),
            ids,
        )
        traces = (
            await session.execute(
                text(
                    "SELECT count(*), coalesce(sum(tokens_in), 0), coalesce(sum(duration_ms), 0) "
                    "FROM compaction_traces "
                    "WHERE customer_id IN :ids"
                ).bindparams(expanding),
                ids,
            )
        ).one()
    return Stored(
        int(customers or 0), int(episodes or 0), int(traces[0]), int(traces[1]), int(traces[2])
    )


async def stream_position(redis: Redis) -> str:
    """A stream id no later than any entry added from now on (the server's clock)."""
    seconds, micros = await redis.time()
    return f"{int(seconds) * 1000 + int(micros) // 1000}-0"


async def take_jobs(redis: Redis, customers: Collection[str], since: str) -> int:
    """Delete the stream entries added since ``since`` for ``customers``; how many there were."""
    taken = 0
    start = since
    while True:
        entries = cast(
            list[tuple[bytes, dict[bytes, bytes]]],
            await redis.xrange(STREAM, min=start, max="+", count=_BATCH),
        )
        ours = [entry_id for entry_id, fields in entries if _customer(fields) in customers]
        if ours:
            with contextlib.suppress(ResponseError):  # NOGROUP: no consumer ever ran here
                await redis.xack(STREAM, GROUP, *ours)
            await redis.xdel(STREAM, *ours)
            taken += len(ours)
        if len(entries) < _BATCH:
            return taken
        start = "(" + entries[-1][0].decode()


def _customer(fields: dict[Any, Any]) -> str:
    value = fields.get(b"customer_id", fields.get("customer_id", b""))
    return value.decode() if isinstance(value, bytes) else str(value)


async def forget_keys(redis: Redis, customers: Collection[str], references: Collection[str]) -> int:
    """Delete the run's replay-detection keys (webhooks whose MessageSid starts with
    ``SM<reference>``) and its conversations' lock fencing counters; how many there were."""
    seen = tuple(f":SM{reference}" for reference in references)
    fences = tuple(f"relaydesk:fence:{customer}:" for customer in customers)
    ours: list[bytes] = []
    async for key in redis.scan_iter(match="relaydesk:seen:*", count=_BATCH):
        if any(marker in key.decode() for marker in seen):
            ours.append(key)
    async for key in redis.scan_iter(match="relaydesk:fence:*", count=_BATCH):
        if key.decode().startswith(fences):
            ours.append(key)
    deleted = 0
    for start in range(0, len(ours), _BATCH):
        deleted += int(await redis.delete(*ours[start : start + _BATCH]))
    return deleted

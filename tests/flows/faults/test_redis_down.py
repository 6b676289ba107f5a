"""Redis killed (SIGKILL) under signed WhatsApp webhook load, then restarted empty on the same
port, against a gateway on its own PostgreSQL database.

While Redis is down the seen-key fast path is skipped and the database's unique constraint
dedupes alone: every webhook is acknowledged, every acknowledged MessageSid is one row, replays
add nothing. Once Redis is back the fast path is used again, the turns left pending while the
conversation locks were unreachable are answered (once each), and a compaction job refused by
Redis is added after all.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer
from sqlalchemy import func, select

from gateway.coordination.dedupe import BACKOFF_S
from gateway.storage.models import Episode, EpisodeSummary, Message, TurnRow
from tests.support.databases import create_database, drop_database, postgres_reachable, unavailable
from tests.support.private_redis import PrivateRedis, private_redis
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.stack import Stack, running_stack
from tests.support.twilio_server import FakeTwilio

# Serial: a private Redis server killed under webhook load, with deadlines.
pytestmark = pytest.mark.serial

TOKEN = "twilio-auth-token-for-tests"
ACCOUNT = "AC" + "b" * 32
BOT = "whatsapp:+14155238886"
PUBLIC_URL = "https://relay.example.org"
PATH = "/webhooks/twilio/whatsapp"
WORKERS = 4


def _params(sid: str, sender: str, text: str) -> dict[str, str]:
    return inbound_params(sid, sender, text, account=ACCOUNT)


async def _post(stack: Stack, params: dict[str, str]) -> int:
    response = await post_signed(stack.client, params, token=TOKEN, public_url=PUBLIC_URL)
    return int(response.status)


class Load:
    """Webhook senders: new MessageSids and replays (Twilio's retries) of acknowledged ones."""

    def __init__(self, stack: Stack, senders: list[str]) -> None:
        self.stack = stack
        self.senders = senders
        self.phase = "up"
        self.sent: dict[str, dict[str, str]] = {}  # sid -> the exact payload
        self.acked: set[str] = set()
        self.results: list[tuple[str, str, int, float]] = []  # (phase, sid, status, seconds)
        self.replays: Counter[str] = Counter()  # phase -> replays sent
        self._rng = random.Random(7)
        self._stop = asyncio.Event()

    async def send(self, sid: str, sender: str | None = None) -> int:
        phase = self.phase
        replay = sid in self.sent
        if not replay:
            sender = sender or self._rng.choice(self.senders)
            self.sent[sid] = _params(sid, sender, f"pedido {sid[-6:]} não chegou")
        began = time.perf_counter()
        status = await _post(self.stack, self.sent[sid])
        self.results.append((phase, sid, status, time.perf_counter() - began))
        if replay:
            self.replays[phase] += 1
        if status == 200:
            self.acked.add(sid)
        return status

    async def _worker(self) -> None:
        while not self._stop.is_set():
            if self.acked and self._rng.random() < 0.3:
                await self.send(self._rng.choice(sorted(self.acked)))
            else:
                await self.send("SM" + uuid.uuid4().hex)
            await asyncio.sleep(0.01)

    async def __aenter__(self) -> Load:
        self._tasks = [asyncio.create_task(self._worker()) for _ in range(WORKERS)]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)


async def _user_rows(stack: Stack) -> Counter[str]:
    async with stack.sessions()() as session:
        rows = await session.execute(
            select(Message.provider_message_id, func.count())
            .where(Message.channel == "whatsapp", Message.role == "user")
            .group_by(Message.provider_message_id)
        )
        return Counter({str(sid): int(count) for sid, count in rows.all()})


async def test_redis_killed_under_load_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    why = await postgres_reachable()
    if why is not None:
        unavailable("PostgreSQL", why)
    twilio = FakeTwilio()
    twilio_server = TestServer(twilio.app())
    await twilio_server.start_server()
    database = await create_database()
    try:
        async with (
            private_redis(tmp_path) as redis_server,
            running_stack(
                "production",
                tmp_path,
                database=database,
                RELAYDESK_REDIS_URL=redis_server.url,
                RELAYDESK_PUBLIC_URL=PUBLIC_URL,
                TWILIO_ACCOUNT_SID=ACCOUNT,
                TWILIO_AUTH_TOKEN=TOKEN,
                TWILIO_WHATSAPP_FROM=BOT,
                TWILIO_API_BASE=str(twilio_server.make_url("")).rstrip("/"),
            ) as stack,
        ):
            await _run(stack, redis_server, twilio)
    finally:
        await drop_database(database)
        await twilio_server.close()


async def _run(stack: Stack, redis_server: PrivateRedis, twilio: FakeTwilio) -> None:
    seen = stack.accept.seen
    queue = stack.accept.memory
    senders = [f"whatsapp:+5511970{n:06d}" for n in range(12)]
    load = Load(stack, senders)

    # One customer whose episode goes idle: their next message, sent while Redis is down,
    # closes it, and the compaction job for the closed episode cannot be queued then.
    closer = "whatsapp:+5511960000001"
    closer_sid = "SM" + uuid.uuid4().hex
    assert await load.send(closer_sid, closer) == 200
    await stack.idle()  # answered: the reply no longer moves the episode's last message time
    idle_episode = await _episode_of(stack, closer_sid)
    async with stack.sessions().begin() as session:
        episode = await session.get_one(Episode, idle_episode)
        episode.last_message_at -= timedelta(hours=2)  # silent for longer than the idle limit

    async with load:
        await asyncio.sleep(0.8)
        before_kill = sorted(load.acked)
        redis_server.kill()
        load.phase = "down"
        # Twilio retries of messages acknowledged while Redis was up.
        replays = random.Random(3).sample(before_kill, min(10, len(before_kill)))
        assert set(await asyncio.gather(*(load.send(sid) for sid in replays))) == {200}
        # Messages are stored, and deduped, in the background after their acknowledgement.
        async with asyncio.timeout(10):
            while not seen.degraded:  # the fast path noticed Redis is down
                await asyncio.sleep(0.02)
        reopen_sid = "SM" + uuid.uuid4().hex
        assert await load.send(reopen_sid, closer) == 200
        assert await _episode_of(stack, reopen_sid) != idle_episode
        # The closed episode's job, kept until Redis is back: queued after the message's
        # commit, so it is kept a moment after the message shows.
        async with asyncio.timeout(10):
            while queue.deferred < 1:
                await asyncio.sleep(0.02)
        await asyncio.sleep(1.2)
        # Drains kicked meanwhile could not take their conversation lock: left pending.
        assert await _turns(stack, "pending") >= 1
        down_acked = sorted(load.acked - set(before_kill))
        await redis_server.restart()
        load.phase = "back"
        replays = random.Random(4).sample(down_acked, min(10, len(down_acked)))
        assert set(await asyncio.gather(*(load.send(sid) for sid in replays))) == {200}
        await asyncio.sleep(0.8)

    failures = [(phase, status) for phase, _, status, _ in load.results if status != 200]
    assert failures == []
    assert load.replays["down"] >= 10 and load.replays["back"] >= 10
    assert Counter(phase for phase, _, _, _ in load.results)["down"] >= 20

    # The fast path is back within its back-off: new sids are marked in the restarted (empty)
    # Redis again, and their replays are answered from it.
    async with asyncio.timeout(BACKOFF_S + 4):
        while seen.degraded:
            assert await load.send("SM" + uuid.uuid4().hex) == 200
            await asyncio.sleep(0.05)
    await stack.idle()  # a quiet loop: no fast-path call runs out of its budget here
    fresh = ["SM" + uuid.uuid4().hex for _ in range(5)]
    for sid in fresh:
        assert await load.send(sid) == 200
    await stack.stored()
    assert not seen.degraded
    direct = redis_server.client()
    try:
        marked = await direct.exists(*(f"relaydesk:seen:whatsapp:{sid}" for sid in fresh))
        assert marked == len(fresh)
    finally:
        await direct.aclose()
    rows_before = await _user_rows(stack)
    for sid in fresh:
        assert await load.send(sid) == 200
    await stack.stored()
    assert await _user_rows(stack) == rows_before

    # Exactly one row per acknowledged MessageSid, and nothing that was not acknowledged.
    rows = await _user_rows(stack)
    assert set(rows) == load.acked
    assert {sid: n for sid, n in rows.items() if n != 1} == {}

    # Turns left pending while the locks were unreachable are answered now, once each.
    await stack.idle()
    assert await _turns(stack, "done") == len(load.acked)
    assert await _turns(stack) == len(load.acked)
    assert len(twilio.created) == len(load.acked)

    # The compaction job Redis refused was added once it came back: a final summary.
    async with asyncio.timeout(8):
        while not await _summarized(stack, idle_episode):
            await asyncio.sleep(0.1)
    assert queue.deferred == 0


async def _turns(stack: Stack, status: str | None = None) -> int:
    query = select(func.count()).select_from(TurnRow)
    if status is not None:
        query = query.where(TurnRow.status == status)
    async with stack.sessions()() as session:
        return int(await session.scalar(query) or 0)


async def _episode_of(stack: Stack, sid: str) -> str:
    """The episode of an acknowledged message, once it is stored (in the background)."""
    async with asyncio.timeout(10):
        while True:
            async with stack.sessions()() as session:
                found = await session.scalar(
                    select(Message.episode_id).where(Message.provider_message_id == sid)
                )
            if found is not None:
                return found
            await asyncio.sleep(0.05)


async def _summarized(stack: Stack, episode_id: str) -> bool:
    async with stack.sessions()() as session:
        found = await session.scalar(
            select(EpisodeSummary.id).where(EpisodeSummary.episode_id == episode_id)
        )
    return found is not None

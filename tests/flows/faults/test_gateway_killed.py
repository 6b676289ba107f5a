"""A real `relaydesk serve` process SIGKILLed in the middle of a webhook load: every message it
acknowledged is stored exactly once; after a restart the provider's re-sends of the others land
exactly once too, and the turns left pending by the dead process are answered (the sweep).

With Redis, the dead process has usually marked the messages it was storing as seen (the
`SET NX` dedupe key comes before the transaction); their re-sends must still be stored. A
conversation lock it held expires only after its TTL (30 s), so the Redis run does not wait
for the answers; the run without Redis checks them. PostgreSQL is a private cluster, so the
gateway's pool does not compete for the shared server's connections.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from devtools.bench.ingest import stored_counts, until_inbox_empty
from tests.support.databases import REDIS_URL, redis_reachable, unavailable
from tests.support.private_postgres import PrivatePostgres
from tests.support.processes import COMMAND, clean_env, free_port
from tests.support.webhook_load import (
    PUBLIC_URL,
    TOKEN,
    Delivery,
    deliver,
    pending_turns,
    signed_webhooks,
)

# Serial: a `relaydesk serve` process killed under webhook load, with deadlines.
pytestmark = pytest.mark.serial

SENDERS = tuple(f"+55219870000{i:02d}" for i in range(8))
MESSAGES = 64
KILL_AFTER_ACKED = 20
START_TIMEOUT_S = 30.0


@asynccontextmanager
async def _serve(env: dict[str, str], workdir: Path, name: str) -> AsyncIterator[tuple[str, int]]:
    """`relaydesk serve` on a free port, healthy; yields (base URL, pid). Stopped with SIGTERM
    at the end unless it is already dead."""
    port = free_port()
    log_path = workdir / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*COMMAND, "serve", "--port", str(port)],
            env=env,
            cwd=workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + START_TIMEOUT_S
            async with httpx.AsyncClient(timeout=2) as http:
                while True:
                    assert process.poll() is None, log_path.read_text()[-2000:]
                    assert time.monotonic() < deadline, log_path.read_text()[-2000:]
                    try:
                        if (await http.get(base + "/healthz")).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    await asyncio.sleep(0.1)
            yield base, process.pid
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.to_thread(process.wait, 10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    await asyncio.to_thread(process.wait)


async def _until_answered(database_url: str, deadline_s: float) -> int:
    deadline = time.monotonic() + deadline_s
    while (pending := await pending_turns(database_url)) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    return pending


@pytest.mark.parametrize("with_redis", [False, True], ids=["no-redis", "redis"])
async def test_a_gateway_killed_mid_load_loses_nothing_it_acknowledged(
    with_redis: bool, tmp_path: Path
) -> None:
    if with_redis and (why := await redis_reachable()) is not None:
        unavailable("Redis", why)
    # A private cluster: the gateway's pool must not compete for the shared server's connections.
    with PrivatePostgres() as postgres:
        await _kill_and_restart(postgres.url, with_redis, tmp_path)


async def _kill_and_restart(url: str, with_redis: bool, tmp_path: Path) -> None:
    env = clean_env(
        RELAYDESK_DATABASE_URL=url,
        RELAYDESK_PUBLIC_URL=PUBLIC_URL,
        RELAYDESK_LOG_LEVEL="WARNING",
        RELAYDESK_AUTO_MIGRATE="true",  # the first process migrates the fresh database
        TWILIO_AUTH_TOKEN=TOKEN,
        # What the killed process had claimed from the inbox is taken over this soon.
        RELAYDESK_INBOX_LEASE_S="2",
    )
    if with_redis:
        # No compaction consumer on the shared stream: other tests' jobs are not ours.
        env.update(RELAYDESK_REDIS_URL=REDIS_URL, RELAYDESK_RUN_COMPACTION="false")
    webhooks = signed_webhooks(uuid.uuid4().hex[:10], MESSAGES, SENDERS)
    sids = {webhook.sid for webhook in webhooks}
    first = Delivery()
    async with httpx.AsyncClient(timeout=10) as http:
        async with _serve(env, tmp_path, "first") as (base, pid):
            # Each webhook tried once: what the dead process did not acknowledge is re-sent
            # after the restart, as the provider would.
            load = asyncio.create_task(
                deliver(http, base, webhooks, first, concurrency=8, retry=False)
            )
            deadline = time.monotonic() + 20
            while len(first.acked) < KILL_AFTER_ACKED and not load.done():
                assert time.monotonic() < deadline, first.statuses()
                await asyncio.sleep(0.005)
            os.kill(pid, signal.SIGKILL)
            await load
        acked_before_kill = set(first.acked)
        unacked = [webhook for webhook in webhooks if webhook.sid not in acked_before_kill]
        assert len(acked_before_kill) >= KILL_AFTER_ACKED
        assert unacked, "the load ended before the kill"
        # No answer at all after the kill: refused or cut connections, never an error code.
        assert set(first.statuses()) <= {200, None}, first.statuses()

        # Nothing acknowledged was lost, nothing doubled — before any re-send.
        counts = await stored_counts(url)
        assert {sid: counts.get(sid) for sid in acked_before_kill} == dict.fromkeys(
            acked_before_kill, 1
        )
        assert set(counts) <= sids
        assert all(count == 1 for count in counts.values())

        second = Delivery()
        async with _serve(env, tmp_path, "second") as (base, _):
            await deliver(http, base, unacked, second, concurrency=8, deadline_s=20)
            # Every acknowledged message, the dead process's included, is stored as a message.
            assert await until_inbox_empty(url, deadline_s=30) >= 0
            if not with_redis:
                # The turns the dead process left pending are resumed by the startup sweep.
                assert await _until_answered(url, deadline_s=20) == 0
    assert second.acked == {webhook.sid for webhook in unacked}
    assert await stored_counts(url) == dict.fromkeys(sids, 1)

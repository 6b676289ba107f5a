"""PostgreSQL stopped in the middle of a webhook load (a private cluster, `pg_ctl stop -m
immediate`): while it is down every webhook is answered 503 with the JSON error — never a 200
for a message that was not stored — and /healthz says 503; the provider retries; once it is back
every message is stored exactly once and every turn is answered."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from devtools.bench.ingest import stored_counts
from gateway.storage.engine import CONNECT_TIMEOUT_S
from tests.support.private_postgres import PrivatePostgres
from tests.support.stack import Stack, running_stack
from tests.support.webhook_load import (
    PUBLIC_URL,
    TOKEN,
    Attempt,
    Delivery,
    Webhook,
    deliver,
    pending_turns,
    signed_webhooks,
)

# Serial: a private PostgreSQL server stopped under webhook load, with deadlines.
pytestmark = pytest.mark.serial

SENDERS = tuple(f"+55119870000{i:02d}" for i in range(8))
MESSAGES = 64
DOWN_S = 1.5


async def _until(condition: Callable[[], bool], deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.01)


@asynccontextmanager
async def _gateway(
    postgres: PrivatePostgres, backend: str, tmp_path: Path, **settings: object
) -> AsyncIterator[tuple[Stack, str]]:
    """The gateway on the private cluster, taking the load's signed Twilio webhooks; yields it
    and its base URL."""
    async with running_stack(
        backend,
        tmp_path,
        database=postgres.url,
        TWILIO_AUTH_TOKEN=TOKEN,
        RELAYDESK_PUBLIC_URL=PUBLIC_URL,
        **settings,
    ) as stack:
        yield stack, str(stack.client.make_url("")).rstrip("/")


async def _healthz(http: httpx.AsyncClient, base: str) -> tuple[int, dict[str, object]]:
    response = await http.get(base + "/healthz")
    return response.status_code, response.json()


@pytest.mark.parametrize("backend", ["embedded", "production"], ids=["no-redis", "redis"])
async def test_postgres_down_mid_load_answers_503_and_every_retry_lands_once(
    backend: str, tmp_path: Path
) -> None:
    webhooks = signed_webhooks(uuid.uuid4().hex[:10], MESSAGES, SENDERS)
    sids = {webhook.sid for webhook in webhooks}
    delivery = Delivery()
    with PrivatePostgres() as postgres:
        # No compaction consumer on the shared Redis stream: it is not what is tested.
        gateway = _gateway(postgres, backend, tmp_path, RELAYDESK_RUN_COMPACTION=False)
        async with gateway as (stack, base):
            async with httpx.AsyncClient(timeout=15) as http:
                assert (await _healthz(http, base))[0] == 200
                # The first half is on its way when the server stops; the second half starts
                # once it is down, so however fast the machine, webhooks arrive during the outage.
                half = len(webhooks) // 2
                loads = [
                    asyncio.create_task(
                        deliver(http, base, webhooks[:half], delivery, concurrency=8)
                    )
                ]
                await _until(lambda: len(delivery.acked) >= half // 2 or loads[0].done(), 10)
                await asyncio.to_thread(postgres.stop)
                down_from = time.monotonic()
                loads.append(
                    asyncio.create_task(
                        deliver(http, base, webhooks[half:], delivery, concurrency=8)
                    )
                )
                health_down = await _healthz(http, base)
                await asyncio.sleep(DOWN_S)
                down_until = time.monotonic()
                await asyncio.to_thread(postgres.start)
                await asyncio.gather(*loads)
                health_up = await _healthz(http, base)
            await stack.idle()  # the turns that could not be answered while it was down
        counts = await stored_counts(postgres.url)
        pending = await pending_turns(postgres.url)

    # Nothing but 200 and 503, and every 503 is the JSON error a provider retries on.
    statuses = delivery.statuses()
    assert set(statuses) <= {200, 503}, statuses
    unavailable = [a for a in delivery.attempts if a.status == 503]
    assert all(
        isinstance(a.body, dict)
        and a.body.get("error") == "storage_unavailable"
        and isinstance(a.body.get("detail"), str)
        for a in unavailable
    ), unavailable[:3]
    # Attempts made entirely while the server was down: all refused, and there were many.
    while_down = [
        a for a in delivery.attempts if down_from <= a.started and a.finished <= down_until
    ]
    assert len(while_down) >= 20, (len(while_down), statuses)
    assert {a.status for a in while_down} == {503}
    # The provider retried until acknowledged; each message is stored exactly once.
    assert delivery.acked == sids
    assert counts == dict.fromkeys(sids, 1)
    assert pending == 0  # and every one of them was answered

    assert health_down[0] == 503, health_down
    assert health_down[1]["error"] == "service_unavailable"
    assert str(health_down[1]["checks"]["database"]).startswith("down")  # type: ignore[index]
    assert health_up[0] == 200, health_up


async def test_a_restarted_or_recovering_database_is_200_or_503_never_500(tmp_path: Path) -> None:
    """Deterministic edges of the same fault: a pooled connection cut by a restart is replaced
    before use (the next webhook is a 200), and a server still in recovery — which refuses
    connections with SQLSTATE 57P03, not an OperationalError — is a 503."""
    first, second, third = signed_webhooks(uuid.uuid4().hex[:10], 3, SENDERS)
    delivery = Delivery()
    with PrivatePostgres() as postgres:
        async with _gateway(postgres, "embedded", tmp_path) as (stack, base):

            async def once(webhook: Webhook) -> Attempt:
                await deliver(http, base, [webhook], delivery, concurrency=1, retry=False)
                return delivery.attempts[-1]

            async with httpx.AsyncClient(timeout=15) as http:
                assert (await once(first)).status == 200  # the pool holds a connection now
                await asyncio.to_thread(postgres.stop)
                await asyncio.to_thread(postgres.start)
                assert (await once(second)).status == 200

                await asyncio.to_thread(postgres.stop)
                await asyncio.to_thread(postgres.start, recovering=True)
                refused = await once(third)
                health_down = await _healthz(http, base)

                await asyncio.to_thread(postgres.stop)
                await asyncio.to_thread(postgres.start)
                accepted = await once(third)
                health_up = await _healthz(http, base)
            await stack.idle()
        counts = await stored_counts(postgres.url)

    assert refused.status == 503, refused
    assert isinstance(refused.body, dict) and refused.body["error"] == "storage_unavailable"
    assert health_down[0] == 503, health_down
    assert accepted.status == 200
    assert health_up[0] == 200, health_up
    assert counts == dict.fromkeys((first.sid, second.sid, third.sid), 1)


async def test_a_database_that_does_not_answer_is_a_503_within_the_connect_timeout(
    tmp_path: Path,
) -> None:
    """A server that takes the connection and never answers (its postmaster frozen) must not
    hold the webhook past the provider's own timeout: 503 once the connect timeout is up."""
    first, second = signed_webhooks(uuid.uuid4().hex[:10], 2, SENDERS)
    delivery = Delivery()
    with PrivatePostgres() as postgres:
        async with _gateway(postgres, "embedded", tmp_path) as (stack, base):
            async with httpx.AsyncClient(timeout=60) as http:
                await deliver(http, base, [first], delivery, concurrency=1, retry=False)
                # Cut the pooled connections, so the next request has to connect anew.
                await asyncio.to_thread(postgres.stop)
                await asyncio.to_thread(postgres.start)
                postgres.pause()
                try:
                    await deliver(http, base, [second], delivery, concurrency=1, retry=False)
                    health = await _healthz(http, base)
                finally:
                    postgres.resume()
                await deliver(http, base, [second], delivery, concurrency=1, retry=False)
            await stack.idle()
        counts = await stored_counts(postgres.url)

    before, hung, after = delivery.attempts
    assert before.status == 200
    assert hung.status == 503, hung
    assert hung.finished - hung.started < CONNECT_TIMEOUT_S + 3
    assert health[0] == 503, health
    assert after.status == 200
    assert counts == dict.fromkeys((first.sid, second.sid), 1)

"""Closing the app stops every background task of the message flow: after a web chat message
was answered, nothing the flow started is left running once the app's cleanup has run."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import create_app
from gateway.config import Settings
from gateway.keys import SCHEDULER, TASKS
from tests.support.databases import REDIS_URL, redis_reachable, unavailable
from tests.support.webchat import signed_visitor

# The names the flow gives its background tasks (exact, or a prefix before the key or id).
NAMES = {"turn-sweeper", "inbox-processor", "inbox-writer", "delivery-records"}
NAMES |= {"owed-summaries", "retention", "event-sender", "webchat-fanout", "embeddings"}
PREFIXES = ("drain:", "send:", "compactor-", "message-facts:")


def _of_the_flow(task: asyncio.Task[object]) -> bool:
    name = task.get_name()
    return name in NAMES or name.startswith(PREFIXES) or name.endswith(" listener")


def _flow_tasks() -> set[str]:
    return {task.get_name() for task in asyncio.all_tasks() if _of_the_flow(task)}


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "RELAYDESK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}",
        "RELAYDESK_WEBCHAT_SECRET": "webchat-secret-for-tests-0123456789abcdef",
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


async def _answer_one_message(client: TestClient) -> None:  # type: ignore[type-arg]
    visitor = await signed_visitor(client)
    response = await client.post(
        "/webchat/messages",
        json={"visitor_id": visitor, "text": "Olá", "client_message_id": uuid.uuid4().hex},
    )
    assert response.status == 202, await response.text()
    async with asyncio.timeout(10):
        await client.app[SCHEDULER].idle()


async def _background_tasks_metric(client: TestClient) -> float:  # type: ignore[type-arg]
    response = await client.get("/metrics")
    assert response.status == 200
    for line in (await response.text()).splitlines():
        if line.startswith("relaydesk_background_tasks "):
            return float(line.split()[1])
    raise AssertionError("relaydesk_background_tasks is not exported")


async def test_closing_the_app_leaves_no_task_of_the_flow(tmp_path: Path) -> None:
    client = TestClient(TestServer(create_app(_settings(tmp_path))))
    await client.start_server()
    try:
        await _answer_one_message(client)
        owner = client.app[TASKS]
        running = _flow_tasks()
        assert {"turn-sweeper", "retention", "compactor-0", "owed-summaries"} <= running
        assert owner.running >= len(running)
        assert await _background_tasks_metric(client) == owner.running
    finally:
        await client.close()
    assert _flow_tasks() == set()
    assert owner.running == 0


async def test_with_redis_and_events_the_listeners_and_the_sender_stop_too(
    tmp_path: Path,
) -> None:
    if (why := await redis_reachable()) is not None:
        unavailable("Redis", why)

    async def receive(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=204)

    receiver = web.Application()
    receiver.router.add_post("/events", receive)
    async with TestServer(receiver) as events:
        settings = _settings(
            tmp_path,
            RELAYDESK_REDIS_URL=REDIS_URL,
            RELAYDESK_EVENTS_URL=str(events.make_url("/events")),
            RELAYDESK_EVENTS_SECRET="events-secret-for-tests-0123456789",
            RELAYDESK_FETCH_ALLOW="127.0.0.1",  # the receiver runs on loopback
        )
        client = TestClient(TestServer(create_app(settings)))
        await client.start_server()
        try:
            await _answer_one_message(client)
            owner = client.app[TASKS]
            running = _flow_tasks()
            assert {"event-sender", "webchat-fanout", "turn-sweeper"} <= running
            listeners = {name for name in running if name.endswith(" listener")}
            assert listeners == {
                "background wake-up listener",
                "inbox wake-up listener",
                "event wake-up listener",
                "recall forgetting listener",
                "knowledge forgetting listener",
                "settings changes listener",
            }
        finally:
            await client.close()
        assert _flow_tasks() == set()
        assert owner.running == 0

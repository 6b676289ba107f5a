"""The `serve --workers N` split, in process: a gateway that only acknowledges (it stores and
answers nothing itself) and a background app that, woken over Redis, stores its webhooks'
messages and answers its turns — web chat replies reaching the socket the gateway holds."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from redis.asyncio import Redis
from sqlalchemy import func, select

from gateway.coordination.wakeups import Wakeups
from gateway.keys import METRICS, SESSIONS, WAKEUPS
from gateway.storage.models import InboxMessage, Message, TurnRow
from tests.support.databases import REDIS_URL, require_postgres_and_redis
from tests.support.shared_gateways import next_frame, shared_gateways
from tests.support.signed_twilio import post_orders
from tests.support.twilio_server import FakeTwilio
from tests.support.webchat import signed_visitor

TOKEN = "twilio-auth-token-for-tests"
ACCOUNT = "AC" + "d" * 32
BOT = "whatsapp:+14155238886"
PUBLIC_URL = "https://relay.example.org"


@asynccontextmanager
async def split(twilio_base: str) -> AsyncIterator[tuple[TestClient, TestClient]]:  # type: ignore[type-arg]
    """(acknowledging gateway, background app) on one fresh database and Redis."""
    values: dict[str, object] = {
        "RELAYDESK_RUN_COMPACTION": False,
        "RELAYDESK_PUBLIC_URL": PUBLIC_URL,
        "TWILIO_ACCOUNT_SID": ACCOUNT,
        "TWILIO_AUTH_TOKEN": TOKEN,
        "TWILIO_WHATSAPP_FROM": BOT,
        "TWILIO_API_BASE": twilio_base,
    }
    apps = [{**values, "RELAYDESK_RUN_BACKGROUND": background} for background in (False, True)]
    async with shared_gateways(apps) as (gateway, background):
        yield gateway, background


async def _count(client: TestClient, query: Any) -> int:  # type: ignore[type-arg]
    async with client.app[SESSIONS]() as session:
        return int(await session.scalar(query) or 0)


async def _until(condition: Any, timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while not await condition():
            await asyncio.sleep(0.05)


async def test_webhooks_acknowledged_by_the_gateway_are_stored_and_answered_by_the_background() -> (
    None
):
    twilio = FakeTwilio()
    server = TestServer(twilio.app())
    await server.start_server()
    try:
        async with split(str(server.make_url("")).rstrip("/")) as (gateway, background):
            async with asyncio.timeout(5):  # the background app listens for wake-ups
                await background.app[WAKEUPS].subscribed.wait()
            sids = await post_orders(
                gateway, 5, account=ACCOUNT, token=TOKEN, public_url=PUBLIC_URL
            )

            async def all_answered() -> bool:
                return len(twilio.created) == len(sids)

            # Sooner than the background's periodic sweep (15 s): woken by each commit.
            await _until(all_answered, timeout=10)
            assert [c["Body"].count("pedido") >= 1 for c in twilio.created] == [True] * 5
            assert await _count(gateway, select(func.count()).select_from(InboxMessage)) == 0
            stored = await _count(
                gateway, select(func.count()).select_from(Message).where(Message.role == "user")
            )
            assert stored == len(sids)
            # Stored by the background app, none by the gateway that acknowledged them.
            assert _stored_here(background) == len(sids)
            assert _stored_here(gateway) == 0
    finally:
        await server.close()


def _stored_here(client: TestClient) -> float:  # type: ignore[type-arg]
    value = client.app[METRICS].registry.get_sample_value(
        "relaydesk_inbound_messages_total", {"channel": "whatsapp"}
    )
    return value or 0.0


async def test_a_web_chat_message_is_answered_by_the_background_on_the_gateways_socket() -> None:
    async with split("http://127.0.0.1:9") as (gateway, background):
        visitor = await signed_visitor(gateway)
        socket = await gateway.ws_connect("/webchat/ws")
        await socket.send_json(
            {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
        )
        assert (await next_frame(socket))["type"] == "ready"
        async with asyncio.timeout(5):
            await background.app[WAKEUPS].subscribed.wait()
        response = await gateway.post(
            "/webchat/messages",
            json={"visitor_id": visitor, "text": "Onde está o pedido?", "client_message_id": "c1"},
        )
        assert response.status == 202  # stored before the answer, as always
        reply = await next_frame(socket, timeout=10)  # woken, not swept
        assert reply["type"] == "message" and reply["role"] == "assistant"
        done = await _count(
            background, select(func.count()).select_from(TurnRow).where(TurnRow.status == "done")
        )
        assert done == 1
        await socket.close()


async def test_wakeups_reach_a_listener() -> None:
    await require_postgres_and_redis()
    channel = f"relaydesk:test-wakeups:{uuid.uuid4().hex}"
    redis = Redis.from_url(REDIS_URL)
    publisher, listener = Wakeups(redis, channel), Wakeups(redis, channel)
    inbox_calls: list[None] = []
    turns: list[str] = []
    try:
        listener.listen(inbox=lambda: inbox_calls.append(None), turn=turns.append)
        async with asyncio.timeout(5):
            await listener.subscribed.wait()
        publisher.inbox()
        publisher.turn("customer-1:whatsapp")
        await redis.publish(channel, "turn:")  # malformed: ignored
        await redis.publish(channel, "something else")  # unknown: ignored

        async def heard() -> bool:
            return len(inbox_calls) == 1 and turns == ["customer-1:whatsapp"]

        await _until(heard, timeout=5)
        await asyncio.sleep(0.2)
        assert len(inbox_calls) == 1 and turns == ["customer-1:whatsapp"]
    finally:
        await publisher.close()
        await listener.close()
        await redis.aclose()

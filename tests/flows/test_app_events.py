"""The whole gateway with RELAYDESK_EVENTS_URL (embedded: SQLite; production: PostgreSQL and
Redis): an event recorded through `app[EVENTS]` reaches a real receiver, signed, and shows in
`/metrics`; a receiver on an internal address the deployment did not list gets nothing; without
the URL nothing is kept or sent; a URL without a secret stops the start."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from gateway.config import ConfigError, load_settings
from gateway.events.sender import EVENT_SENDER
from gateway.keys import EVENTS, SETTINGS
from gateway.storage.models import OutboundEvent
from tests.support.events import SECRET, EventReceiver, until
from tests.support.stack import Stack, running_stack

BACKENDS = ["embedded", "production"]
# The receiver runs on loopback: listed as a host of the deployment's own.
LOOPBACK = "127.0.0.1"


async def record_through_app(stack: Stack, kind: str, data: dict[str, object]) -> None:
    async with stack.sessions()() as session:
        async with session.begin():
            await stack.app[EVENTS].record(session, kind, data)


async def stored_events(stack: Stack) -> int:
    async with stack.sessions()() as session:
        return int(await session.scalar(select(func.count()).select_from(OutboundEvent)) or 0)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_event_recorded_by_the_app_reaches_the_receiver_signed(
    backend: str, tmp_path: Path, receiver: EventReceiver
) -> None:
    async with running_stack(
        backend,
        tmp_path,
        RELAYDESK_EVENTS_URL=receiver.url,
        RELAYDESK_EVENTS_SECRET=SECRET.decode(),
        RELAYDESK_FETCH_ALLOW=LOOPBACK,
    ) as stack:
        assert EVENT_SENDER in stack.app
        await record_through_app(stack, "conversation.waiting", {"conversation_id": "c9"})
        await receiver.wait_for(1)
        [request] = receiver.requests
        assert request.signed_by(SECRET)
        assert request.json()["type"] == "conversation.waiting"
        assert request.json()["data"] == {"conversation_id": "c9"}

        async def counted() -> bool:
            text = await (await stack.client.get("/metrics")).text()
            return "relaydesk_events_sent_total 1.0" in text

        await until(counted)  # the sender records the receiver's answer after it came
    assert len(receiver.requests) == 1


async def test_a_receiver_on_an_unlisted_internal_address_gets_nothing(
    tmp_path: Path, receiver: EventReceiver
) -> None:
    async with running_stack(
        "embedded",
        tmp_path,
        RELAYDESK_EVENTS_URL=receiver.url,
        RELAYDESK_EVENTS_SECRET=SECRET.decode(),
    ) as stack:
        await record_through_app(stack, "conversation.waiting", {"conversation_id": "c9"})

        async def refused() -> bool:
            async with stack.sessions()() as session:
                error = await session.scalar(select(OutboundEvent.last_error))
            return error is not None

        await until(refused)
        async with stack.sessions()() as session:
            event = await session.scalar(select(OutboundEvent))
        assert event is not None and event.delivered_at is None
        assert event.last_error is not None and "RELAYDESK_FETCH_ALLOW" in event.last_error
    assert receiver.requests == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_without_an_events_url_nothing_is_kept_or_sent(
    backend: str, tmp_path: Path, receiver: EventReceiver
) -> None:
    async with running_stack(backend, tmp_path) as stack:
        assert EVENT_SENDER not in stack.app
        await record_through_app(stack, "conversation.waiting", {"conversation_id": "c1"})
        assert await stored_events(stack) == 0
    assert receiver.requests == []


async def test_events_recorded_by_a_process_that_only_acknowledges_are_sent_by_the_background(
    tmp_path: Path, receiver: EventReceiver
) -> None:
    events = {
        "RELAYDESK_EVENTS_URL": receiver.url,
        "RELAYDESK_EVENTS_SECRET": SECRET.decode(),
        "RELAYDESK_FETCH_ALLOW": LOOPBACK,
    }
    async with running_stack("production", tmp_path, **events) as background:
        url = background.app[SETTINGS].database_url
        async with running_stack(
            "production", tmp_path, database=url, RELAYDESK_RUN_BACKGROUND=False, **events
        ) as gateway:
            assert EVENT_SENDER not in gateway.app
            await record_through_app(gateway, "conversation.waiting", {"conversation_id": "c1"})
            await receiver.wait_for(1)
    [request] = receiver.requests
    assert request.signed_by(SECRET)
    assert request.json()["data"] == {"conversation_id": "c1"}


def test_an_events_url_without_a_secret_is_refused_at_start() -> None:
    with pytest.raises(ConfigError, match="RELAYDESK_EVENTS_SECRET"):
        load_settings(RELAYDESK_EVENTS_URL="https://desk.example/hooks")
    with pytest.raises(ConfigError, match="RELAYDESK_EVENTS_SECRET"):
        load_settings(RELAYDESK_EVENTS_URL="https://desk.example/hooks", RELAYDESK_EVENTS_SECRET="")


def test_a_short_events_secret_is_refused() -> None:
    with pytest.raises(ConfigError, match="at least 16 bytes"):
        load_settings(
            RELAYDESK_EVENTS_URL="https://desk.example/hooks", RELAYDESK_EVENTS_SECRET="short"
        )
    settings = load_settings(
        RELAYDESK_EVENTS_URL="https://desk.example/hooks/",
        RELAYDESK_EVENTS_SECRET=SECRET.decode(),
    )
    assert settings.events_url == "https://desk.example/hooks/"  # posted to as given
    with pytest.raises(ConfigError, match="RELAYDESK_EVENTS_URL"):
        load_settings(RELAYDESK_EVENTS_URL="desk.example/hooks", RELAYDESK_EVENTS_SECRET="x" * 16)

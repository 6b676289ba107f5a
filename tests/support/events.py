"""A real HTTP receiver for outbound events on 127.0.0.1: records every request (headers and
the raw body) and answers what the test scripted (200 unless told otherwise). It can go down
(connection refused) and come back on the same port.

Shared by the sender's own tests and the whole-app event flows: the `receiver` fixture (a
plugin of the root conftest), the signing secret both sides use, and `until`."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import web

SECRET = b"events-secret-for-tests-0123456789"


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes
    status: int  # what the receiver answered
    at: datetime

    @property
    def delivery(self) -> str:
        return self.headers["X-Relaydesk-Delivery"]

    def json(self) -> Any:
        return json.loads(self.body)

    def signed_by(self, secret: bytes) -> bool:
        """Checked as a receiver would, with nothing of the gateway's code."""
        timestamp = self.headers["X-Relaydesk-Timestamp"]
        expected = hmac.new(secret, timestamp.encode() + b"." + self.body, hashlib.sha256)
        return hmac.compare_digest(
            self.headers["X-Relaydesk-Signature"], "sha256=" + expected.hexdigest()
        )


@dataclass
class Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)


class EventReceiver:
    def __init__(self, *, delay_s: float = 0.0) -> None:
        self.requests: list[Received] = []
        self._script: list[Answer] = []
        self._delay_s = delay_s
        self._runner: web.AppRunner | None = None
        self._arrived = asyncio.Condition()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/events"

    def answer(self, status: int, times: int = 1, **headers: str) -> None:
        """Answer the next `times` requests with `status` (then 200 again)."""
        self._script.extend(Answer(status, headers) for _ in range(times))

    def delivered(self) -> list[Received]:
        return [request for request in self.requests if 200 <= request.status < 300]

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        answer = self._script.pop(0) if self._script else Answer(200)
        received = Received(dict(request.headers), body, answer.status, datetime.now(UTC))
        self.requests.append(received)
        async with self._arrived:
            self._arrived.notify_all()
        return web.Response(status=answer.status, headers=answer.headers, text="scripted")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/events", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        """Go down: connections are refused until `start` again."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def wait_for(self, count: int, *, delivered: bool = True, timeout: float = 20.0) -> None:
        """Until `count` requests arrived (answered 2xx, unless `delivered=False`)."""

        def enough() -> bool:
            seen = self.delivered() if delivered else self.requests
            return len(seen) >= count

        async with asyncio.timeout(timeout), self._arrived:
            await self._arrived.wait_for(enough)


@pytest.fixture
async def receiver() -> AsyncIterator[EventReceiver]:
    server = EventReceiver()
    await server.start()
    yield server
    await server.stop()


async def until(check: Callable[[], Awaitable[bool]], *, timeout: float = 20.0) -> None:
    """Poll `check` until it holds (a generous deadline, not a timing assertion)."""
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.02)

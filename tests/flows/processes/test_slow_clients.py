"""Slow clients against a real `relaydesk serve` (one process, and `--workers 2`): requests
whose head or body trickles in are dropped by the server within their deadlines, while a
normal request is answered meanwhile and a web chat socket and a console event stream, open
all along, are not cut."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from devtools.bench.harness import serving
from tests.support.console import PASSWORD, USERNAME, csrf_of
from tests.support.databases import (
    REDIS_URL,
    create_database,
    drop_database,
    postgres_reachable,
    redis_reachable,
    unavailable,
)
from tests.support.processes import COMMAND, clean_env, free_port

# Serial: `relaydesk serve` processes, and deadlines measured in seconds.
pytestmark = pytest.mark.serial

HEADER_TIMEOUT_S = 2.0
BODY_TIMEOUT_S = 3.0
# Beyond a deadline, how long the server may take to drop a connection on a busy machine.
MARGIN_S = 4.0
SLOW_HEADS = 25
SLOW_BODIES = 25
TRICKLE_EVERY_S = 0.3
WEBCHAT_SECRET = "webchat-secret-for-tests-0123456789abcdef"


async def _slow_client(port: int, first: bytes, trickle: bytes) -> float:
    """Send `first`, then `trickle` a byte at a time, never finishing the request; seconds
    until the server closed the connection."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def dribble() -> None:
        writer.write(first)
        for byte in trickle:
            await asyncio.sleep(TRICKLE_EVERY_S)
            writer.write(bytes([byte]))
            await writer.drain()

    sending = asyncio.create_task(dribble())
    try:
        with contextlib.suppress(ConnectionError):
            while await reader.read(4096):  # a 408 the server may manage to send
                pass
        return time.monotonic() - started
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await sending
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def _slow_head(index: int) -> tuple[bytes, bytes]:
    if index % 2:  # half a request line
        return b"GET /heal", b"thz-never-ending-path" * 10
    head = b"POST /webchat/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    return head, b"X-Padding: " + b"a" * 200


def _slow_body() -> tuple[bytes, bytes]:
    head = (
        b"POST /webchat/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    return head + b'{"text": "', b"a" * 500


@asynccontextmanager
async def _gateway(workers: int, tmp_path: Path) -> AsyncIterator[int]:
    """`relaydesk serve` with short deadlines and a console account; yields its port."""
    values = {
        "RELAYDESK_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
        "RELAYDESK_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
        "RELAYDESK_WEBCHAT_SECRET": WEBCHAT_SECRET,
        "RELAYDESK_AUTO_MIGRATE": "true",
        "RELAYDESK_RUN_COMPACTION": "false",
        "RELAYDESK_LOG_LEVEL": "WARNING",
    }
    url = None
    if workers > 1:
        for what, why in (
            ("PostgreSQL", await postgres_reachable()),
            ("Redis", await redis_reachable()),
        ):
            if why is not None:
                unavailable(what, why)
        url = await create_database()
        values.update(RELAYDESK_DATABASE_URL=url, RELAYDESK_REDIS_URL=REDIS_URL)
    env = clean_env(**values)
    try:
        added = subprocess.run(
            [*COMMAND, "operator", "add", USERNAME, "--password-stdin"],
            input=PASSWORD + "\n",
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert added.returncode == 0, added.stderr
        port = free_port()
        serve = [*COMMAND, "serve", "--port", str(port), "--workers", str(workers)]
        async with serving([serve], env, tmp_path, "serve.log", port, "/healthz"):
            yield port
    finally:
        if url is not None:
            await drop_database(url)


async def _open_webchat(http: aiohttp.ClientSession, base: str) -> aiohttp.ClientWebSocketResponse:
    response = await http.post(f"{base}/webchat/visitors")
    assert response.status == 201, await response.text()
    visitor = (await response.json())["visitor_id"]
    socket = await http.ws_connect(f"{base}/webchat/ws")
    await socket.send_json(
        {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
    )
    assert (await socket.receive_json(timeout=10))["type"] == "ready"
    return socket


async def _open_console_stream(http: aiohttp.ClientSession, base: str) -> aiohttp.ClientResponse:
    form = await http.get(f"{base}/console/login")
    login = await http.post(
        f"{base}/console/login",
        data={"csrf_token": csrf_of(await form.text()), "username": USERNAME, "password": PASSWORD},
        allow_redirects=False,
    )
    assert login.status == 303, await login.text()
    stream = await http.get(f"{base}/console/conversations/stream")
    assert stream.status == 200
    assert (await stream.content.readline()).startswith(b"retry:")
    return stream


async def _still_open(stream: aiohttp.ClientResponse) -> bool:
    """Nothing to read but no end either: a closed stream would end at once."""
    try:
        while True:
            chunk = await asyncio.wait_for(stream.content.readany(), 1.0)
            if not chunk:
                return False
    except TimeoutError:
        return True


@pytest.mark.parametrize("workers", [1, 2], ids=["one-process", "two-workers"])
async def test_slow_heads_and_bodies_are_dropped_long_lived_connections_are_not(
    workers: int, tmp_path: Path
) -> None:
    async with _gateway(workers, tmp_path) as port:
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            socket = await _open_webchat(http, base)
            stream = await _open_console_stream(http, base)

            heads = [
                asyncio.create_task(_slow_client(port, *_slow_head(i))) for i in range(SLOW_HEADS)
            ]
            bodies = [
                asyncio.create_task(_slow_client(port, *_slow_body())) for _ in range(SLOW_BODIES)
            ]
            await asyncio.sleep(0.5)
            # Meanwhile a normal request is answered.
            async with http.get(f"{base}/healthz") as health:
                assert health.status == 200
            # Bounded: before the change the heads were held 75 s and the bodies for ever.
            done, pending = await asyncio.wait(
                [*heads, *bodies], timeout=BODY_TIMEOUT_S + MARGIN_S + 1
            )
            for task in pending:
                task.cancel()
            assert not pending, f"{len(pending)} slow connections still open"
            head_s = [task.result() for task in heads]
            body_s = [task.result() for task in bodies]
            assert max(head_s) < HEADER_TIMEOUT_S + MARGIN_S, head_s
            assert max(body_s) < BODY_TIMEOUT_S + MARGIN_S, body_s
            assert min(body_s) >= BODY_TIMEOUT_S - 0.5, body_s  # its own deadline, not another

            # The web chat socket, open longer than both deadlines, still answers a frame.
            await socket.send_json({"type": "nonsense"})
            frame = await socket.receive_json(timeout=10)
            assert frame["type"] == "error" and frame["error"] == "bad_frame", frame
            await socket.close()
            assert await _still_open(stream)
            stream.close()

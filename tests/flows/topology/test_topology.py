"""The compose topology, run natively: the shipped docker/nginx.conf (rendered as nginx's image
renders it) in Debian's nginx, in front of two `relaydesk serve` gateways, a `relaydesk
background`, a `relaydesk worker`, PostgreSQL and Redis (`tests/support/topology.py`).

Through the proxy: the login throttle counts each client apart (nginx names it in
X-Forwarded-For, the gateways trust nginx alone); a web chat visitor id one gateway issued is
accepted by both; a signed Cloud API webhook is acknowledged, stored and answered; a web chat
reply comes back over the proxied websocket. And the processes without a port report their
heartbeat to `relaydesk health`."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from gateway.operators.throttle import FREE_FAILURES
from tests.support.cloud_stack import PATH as CLOUD_PATH
from tests.support.cloud_stack import SECRET as CLOUD_APP_SECRET
from tests.support.cloud_stack import WA_ID, cloud_text
from tests.support.topology import Topology, running_topology

# Several server processes and nginx: alone, after the parallel layer; one topology (and one
# event loop) for the module's tests.
pytestmark = [pytest.mark.serial, pytest.mark.asyncio(loop_scope="module")]

USERNAME = "ana.ops"
PASSWORD = "correct horse battery"
WRONG = "not the password at all"
STRANGER = "127.0.0.2"
OPERATOR = "127.0.0.3"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def topology(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Topology]:
    async with running_topology(tmp_path_factory.mktemp("topology")) as running:
        yield running


def _from(address: str) -> aiohttp.ClientSession:
    """A client connecting to the proxy from `address` (a loopback address of its own)."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())


async def _login(
    topology: Topology, client: str, password: str, headers: dict[str, str] | None = None
) -> int:
    token = secrets.token_urlsafe(16)
    form = {"csrf_token": token, "username": USERNAME, "password": password}
    sent = {**(headers or {}), "Cookie": f"relaydesk_login_csrf={token}"}
    async with _from(client) as session:
        async with session.post(
            f"{topology.proxy}/console/login", data=form, headers=sent, allow_redirects=False
        ) as answer:
            return answer.status


async def _until(condition: Any, topology: Topology, timeout: float = 30.0) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not await condition():
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(f"not reached in {timeout} s:\n{topology.log_tail()}") from None


async def test_the_proxy_reaches_both_gateways_and_the_portless_processes_are_healthy(
    topology: Topology,
) -> None:
    instances = set()
    async with aiohttp.ClientSession() as session:
        for _ in range(8):
            async with session.get(f"{topology.proxy}/healthz") as answer:
                assert answer.status == 200
                instances.add((await answer.json())["instance"])
    assert len(instances) == 2  # round robin over the two gateways, each its own instance

    async def healthy(role: str) -> bool:
        return topology.run("health", role).returncode == 0

    for role in ("background", "worker"):
        await _until(lambda role=role: healthy(role), topology)
        assert "healthy, last beat" in topology.run("health", role).stdout


async def test_a_stranger_behind_the_proxy_locks_out_only_his_own_address(
    topology: Topology,
) -> None:
    added = topology.run("operator", "add", USERNAME, "--password-stdin", stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    for _ in range(FREE_FAILURES):
        assert await _login(topology, STRANGER, WRONG) == 401
    assert await _login(topology, STRANGER, PASSWORD) == 429
    # A forwarding header of his own does not make him someone else: nginx appends the
    # address he connects from, and that is the one the gateways count.
    assert await _login(topology, STRANGER, PASSWORD, {"X-Forwarded-For": OPERATOR}) == 429
    # The operator, from her own address, is in at once, through either gateway.
    assert await _login(topology, OPERATOR, PASSWORD) == 303
    assert await _login(topology, OPERATOR, PASSWORD) == 303


async def test_a_visitor_id_issued_by_one_gateway_is_accepted_by_both(
    topology: Topology,
) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{topology.proxy}/webchat/visitors") as answer:
            assert answer.status == 201
            visitor = (await answer.json())["visitor_id"]
        for number, gateway in enumerate((*topology.gateways, topology.proxy)):
            message = {"visitor_id": visitor, "text": "Oi", "client_message_id": f"c{number}"}
            async with session.post(f"{gateway}/webchat/messages", json=message) as answer:
                assert answer.status == 202, (gateway, await answer.text())


async def test_a_cloud_api_webhook_and_a_web_chat_reply_go_through_the_proxy(
    topology: Topology,
) -> None:
    body = json.dumps(cloud_text("Onde está o meu pedido?")).encode()
    signature = "sha256=" + hmac.new(CLOUD_APP_SECRET.encode(), body, "sha256").hexdigest()
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": signature}
    async with aiohttp.ClientSession() as session:
        async with session.post(
            f"{topology.proxy}{CLOUD_PATH}", data=body, headers=headers
        ) as answer:
            assert answer.status == 200, await answer.text()
        forged = {**headers, "X-Hub-Signature-256": "sha256=" + hashlib.sha256(body).hexdigest()}
        async with session.post(
            f"{topology.proxy}{CLOUD_PATH}", data=body, headers=forged
        ) as answer:
            assert answer.status == 403

        # The gateway only acknowledged; the background process stores, answers and sends.
        async def answered() -> bool:
            return any(sent.get("to") == WA_ID for sent in topology.graph.sent())

        await _until(answered, topology)
        reply = next(sent for sent in topology.graph.sent() if sent.get("to") == WA_ID)
        assert reply["type"] == "text" and reply["text"]["body"]

        async with session.post(f"{topology.proxy}/webchat/visitors") as answer:
            visitor = (await answer.json())["visitor_id"]
        async with session.ws_connect(f"{topology.proxy.replace('http', 'ws')}/webchat/ws") as ws:
            await ws.send_json(
                {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
            )
            assert (await ws.receive_json(timeout=10))["type"] == "ready"
            await ws.send_json(
                {"type": "message", "text": "Onde está o pedido?", "client_message_id": "w1"}
            )
            frames: list[dict[str, Any]] = []
            async with asyncio.timeout(30):
                while not frames or frames[-1].get("role") != "assistant":
                    frames.append(await ws.receive_json())
            assert frames[0]["type"] == "ack" and frames[0]["client_message_id"] == "w1"
            assert frames[-1]["type"] == "message" and frames[-1]["text"]
            assert frames[-1]["reply_to"] == "w1"

"""What the WhatsApp Cloud API channel fetches to upload, through a real gateway: a Cloud API
customer's message makes a local model answer with a media marker; the gateway downloads the
file it names and uploads it to the Graph API (a local server). An internal server on loopback
stands for what runs inside the deployment.

Nothing is fetched from a host the tenant's `media_hosts` does not list (the marker is dropped),
nor from an internal address the deployment did not list in RELAYDESK_FETCH_ALLOW, directly or
through a redirect; a body past the attachment cap is abandoned, not uploaded; an operator's
attachment on an internal address is refused with 422 before anything is stored."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import select

from devtools.loopback import serving_on_loopback
from gateway.storage.models import Message, TurnRow
from outbound.kinds import MIB
from tests.support.app_settings import AUTH
from tests.support.cloud_stack import WA_ID, cloud_stack, cloud_text, post_cloud
from tests.support.graph_server import LocalGraph
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.stack import Stack
from tests.support.tenant_settings import save_domain_settings
from tests.support.whatsapp_stack import until

INVOICE = b"%PDF-1.7 invoice 4471"
BASE = "/v1/operator/conversations"
CHUNK = b"x" * (64 * 1024)


@dataclass
class Server:
    """A web server on loopback that records every path asked of it. Reached as `127.0.0.1` it
    is an internal host; reached as `localhost` (listed where a test lists it), a file host."""

    hits: list[str] = field(default_factory=list)
    written: int = 0  # bytes of `/big` that went out
    big_done: asyncio.Event = field(default_factory=asyncio.Event)
    root: str = ""

    @property
    def port(self) -> int:
        return int(self.root.rsplit(":", 1)[1])

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/secret", self.secret)
        app.router.add_get("/invoice.pdf", self.invoice)
        app.router.add_get("/to-internal", self.to_internal)
        app.router.add_get("/big.pdf", self.big)
        return app

    async def secret(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        return web.Response(body=b"internal secret", content_type="application/pdf")

    async def invoice(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        return web.Response(body=INVOICE, content_type="application/pdf")

    async def to_internal(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        raise web.HTTPFound(f"http://127.0.0.1:{self.port}/secret")

    async def big(self, request: web.Request) -> web.StreamResponse:
        """60 MiB without a length, as fast as the reader takes it."""
        self.hits.append(request.path)
        response = web.StreamResponse(headers={"Content-Type": "application/pdf"})
        await response.prepare(request)
        try:
            for _ in range(60 * 16):
                await response.write(CHUNK)
                self.written += len(CHUNK)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.big_done.set()
        return response


@dataclass
class Setup:
    stack: Stack
    graph: LocalGraph
    server: Server


def _answering(url: str) -> FakeOpenAI:
    """A model talked into attaching `url` when asked for the invoice."""
    return FakeOpenAI(
        reply_for=lambda call: (
            f"Segue a nota.\n[[media: {url} | invoice]]" if "nota" in call.last_user_text else None
        )
    )


@asynccontextmanager
async def _gateway(
    tmp_path: Path, path: str, *, internal: bool = False, **settings: object
) -> AsyncIterator[Setup]:
    """A Cloud API gateway whose model attaches the server's `path`, as `127.0.0.1` (internal)
    or as `localhost`."""
    server = Server()
    async with serving_on_loopback(server.app()) as root:
        server.root = root
        host = "127.0.0.1" if internal else "localhost"
        model = _answering(f"http://{host}:{server.port}{path}")
        async with (
            model.serving() as model_url,
            cloud_stack(tmp_path, **model_settings(model_url), **settings) as (stack, graph),
        ):
            yield Setup(stack, graph, server)


async def _ask_for_the_invoice(setup: Setup) -> TurnRow:
    assert await post_cloud(setup.stack, cloud_text("Me manda a nota fiscal?")) == 200
    await setup.stack.idle()
    async with setup.stack.sessions()() as session:
        turn = await session.scalar(select(TurnRow))
    assert turn is not None
    return turn


async def _stored_reply(stack: Stack) -> Message:
    async with stack.sessions()() as session:
        reply = await session.scalar(select(Message).where(Message.role == "assistant"))
    assert reply is not None
    return reply


async def test_a_media_marker_naming_an_internal_url_fetches_nothing(tmp_path: Path) -> None:
    async with _gateway(tmp_path, "/secret", internal=True) as setup:
        await _ask_for_the_invoice(setup)
        # The marker left the text: the customer reads the words only, and gets no file.
        [sent] = setup.graph.sent()
        assert sent["text"]["body"] == "Segue a nota."
        reply = await _stored_reply(setup.stack)
        assert "[[media" not in reply.text and reply.media is None
    assert setup.server.hits == []
    assert setup.graph.uploads() == []


async def test_a_listed_media_host_on_an_internal_address_is_still_not_fetched(
    tmp_path: Path,
) -> None:
    async with _gateway(tmp_path, "/secret", internal=True) as setup:
        # The tenant names the host, but the deployment never listed it as one of its own.
        await save_domain_settings(setup.stack, media_hosts=["127.0.0.1"])
        turn = await _ask_for_the_invoice(setup)
        assert turn.delivery_status == "failed"
        assert turn.error is not None and "loopback" in turn.error
    assert setup.server.hits == []
    assert setup.graph.uploads() == []


async def test_a_file_on_a_listed_host_is_uploaded_and_sent(tmp_path: Path) -> None:
    async with _gateway(tmp_path, "/invoice.pdf", RELAYDESK_FETCH_ALLOW="localhost") as setup:
        await save_domain_settings(setup.stack, media_hosts=["localhost"])
        turn = await _ask_for_the_invoice(setup)
        assert turn.delivery_status == "sent", turn.error
        [upload] = setup.graph.uploads()
        assert upload.files["file"].data == INVOICE
        text, document = setup.graph.sent()
        assert text["text"]["body"] == "Segue a nota." and document["type"] == "document"
        assert document["to"] == WA_ID
    assert setup.server.hits == ["/invoice.pdf"]


async def test_a_redirect_from_a_listed_host_to_an_internal_address_is_refused(
    tmp_path: Path,
) -> None:
    async with _gateway(tmp_path, "/to-internal", RELAYDESK_FETCH_ALLOW="localhost") as setup:
        await save_domain_settings(setup.stack, media_hosts=["localhost"])
        turn = await _ask_for_the_invoice(setup)
        assert turn.delivery_status == "failed"
        assert turn.error is not None and "loopback" in turn.error
    assert setup.server.hits == ["/to-internal"]  # never "/secret"
    assert setup.graph.uploads() == []


async def test_a_body_past_the_attachment_cap_is_abandoned_not_uploaded(tmp_path: Path) -> None:
    async with _gateway(tmp_path, "/big.pdf", RELAYDESK_FETCH_ALLOW="localhost") as setup:
        await save_domain_settings(setup.stack, media_hosts=["localhost"])
        turn = await _ask_for_the_invoice(setup)
        assert turn.delivery_status == "failed"
        assert turn.error is not None and "more than the" in turn.error
        await asyncio.wait_for(setup.server.big_done.wait(), 30)
    assert setup.graph.uploads() == []
    # Read up to the 16 MiB cap; the rest of the 60 MiB never left the server (what did sat
    # in the sockets' buffers).
    assert setup.server.written < 30 * MIB


async def _json(stack: Stack, path: str, **body: Any) -> tuple[int, Any]:
    response = await stack.client.post(path, json=body, headers=AUTH)
    return response.status, await response.json()


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_an_operators_attachment_on_an_internal_address_is_refused(
    tmp_path: Path, backend: str
) -> None:
    async with _gateway(tmp_path, "/invoice.pdf", backend=backend) as setup:
        stack, server = setup.stack, setup.server
        assert await post_cloud(stack, cloud_text("Quero falar com o financeiro")) == 200
        await stack.idle()
        status, held = await _json(
            stack,
            f"{BASE}/handoff",
            channel="whatsapp_cloud",
            external_id=f"+{WA_ID}",
            reason="financeiro",
            actor="alice",
        )
        assert status == 200, held
        path = f"{BASE}/{held['id']}/messages"
        for url in (
            f"http://127.0.0.1:{server.port}/secret",
            f"http://localhost:{server.port}/secret",  # a name that resolves to loopback
            "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
            f"http://[::ffff:127.0.0.1]:{server.port}/secret",
        ):
            status, refused = await _json(
                stack, path, actor="alice", text="Segue", media=[{"url": url}]
            )
            assert (status, refused["error"]) == (422, "attachment_refused"), url
            assert refused["detail"].startswith("media[0]: ")
        async with stack.sessions()() as session:
            operator_messages = list(
                await session.scalars(select(Message).where(Message.role == "assistant"))
            )
        assert len(operator_messages) == 1  # the bot's first reply only: nothing stored
    assert server.hits == []
    assert setup.graph.uploads() == []


async def test_an_operators_attachment_on_a_listed_host_is_uploaded(tmp_path: Path) -> None:
    async with _gateway(tmp_path, "/invoice.pdf", RELAYDESK_FETCH_ALLOW="localhost") as setup:
        stack, server = setup.stack, setup.server
        assert await post_cloud(stack, cloud_text("Quero falar com o financeiro")) == 200
        await stack.idle()
        status, held = await _json(
            stack,
            f"{BASE}/handoff",
            channel="whatsapp_cloud",
            external_id=f"+{WA_ID}",
            reason="financeiro",
            actor="alice",
        )
        assert status == 200, held
        url = f"http://localhost:{server.port}/invoice.pdf"
        status, written = await _json(
            stack, f"{BASE}/{held['id']}/messages", actor="alice", media=[{"url": url}]
        )
        assert status == 202, written
        await until(lambda: len(setup.graph.uploads()) == 1)
        [upload] = setup.graph.uploads()
        assert upload.files["file"].data == INVOICE
    assert server.hits == ["/invoice.pdf"]

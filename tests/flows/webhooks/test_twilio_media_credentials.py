"""Where a Twilio webhook's media URL takes the account's credentials, through a real gateway: a
shared contact's vCard (`MediaUrl0`) is fetched before the answer. The account's credentials go
to Twilio's hosts only (here the local Twilio's host, `127.0.0.1`): not to another host the
webhook names (`localhost`), nor with a redirect from Twilio to elsewhere. A URL on an internal
address the deployment did not list is not fetched at all, and a card far past the vCard cap
is not read whole."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from sqlalchemy import select

from devtools.loopback import serving_on_loopback
from gateway.storage.models import Message
from outbound.kinds import MIB
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.whatsapp_stack import ACCOUNT, TOKEN, WhatsAppStack, whatsapp_stack

NUMBER = "+5511998765432"
CARD = b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ana Souza\r\nTEL:+55 11 98765-4321\r\nEND:VCARD\r\n"
READ = "[contact] Ana Souza +55 11 98765-4321"
BASIC = "Basic " + base64.b64encode(f"{ACCOUNT}:{TOKEN}".encode()).decode()
CHUNK = b"x" * (64 * 1024)
# Both names of the media server are the deployment's own here.
LOOPBACK = {"RELAYDESK_FETCH_ALLOW": "127.0.0.1,localhost"}


@dataclass
class MediaServer:
    """One server, two hosts: as `127.0.0.1` it is Twilio's (the local Twilio's host), as
    `localhost` another one. Records the host and `Authorization` of every request."""

    seen: list[tuple[str, str, str | None]] = field(default_factory=list)
    written: int = 0
    huge_done: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/card.vcf", self.card)
        app.router.add_get("/to-elsewhere.vcf", self.to_elsewhere)
        app.router.add_get("/huge.vcf", self.huge)
        return app

    def _record(self, request: web.Request) -> None:
        host = request.host.rsplit(":", 1)[0]
        self.seen.append((host, request.path, request.headers.get("Authorization")))

    async def card(self, request: web.Request) -> web.Response:
        self._record(request)
        return web.Response(body=CARD, content_type="text/vcard")

    async def to_elsewhere(self, request: web.Request) -> web.Response:
        """Twilio answers a media URL with a redirect to where the file is stored."""
        self._record(request)
        raise web.HTTPTemporaryRedirect(f"http://localhost:{self.port}/card.vcf")

    async def huge(self, request: web.Request) -> web.StreamResponse:
        """A 40 MiB "card" without a length, as fast as the reader takes it."""
        self._record(request)
        response = web.StreamResponse(headers={"Content-Type": "text/vcard"})
        await response.prepare(request)
        try:
            for _ in range(40 * 16):
                await response.write(CHUNK)
                self.written += len(CHUNK)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.huge_done.set()
        return response


@pytest.fixture
async def media() -> AsyncIterator[MediaServer]:
    server = MediaServer()
    async with serving_on_loopback(server.app()) as root:
        server.port = int(root.rsplit(":", 1)[1])
        yield server


async def _share(gateway: WhatsAppStack, url: str) -> list[str]:
    """A shared contact whose card is at `url`, as Twilio's webhook sends it; the texts of the
    customer's messages stored once it is answered."""
    params = inbound_params(f"MM{uuid.uuid4().hex}", f"whatsapp:{NUMBER}", "", account=ACCOUNT)
    params.update(
        MessageType="contacts", NumMedia="1", MediaContentType0="text/vcard", MediaUrl0=url
    )
    response = await post_signed(
        gateway.stack.client, params, token=TOKEN, public_url=gateway.public_url
    )
    assert response.status == 200
    await gateway.stack.idle()
    async with gateway.stack.sessions()() as session:
        ordered = select(Message.text).where(Message.role == "user").order_by(Message.id)
        return list(await session.scalars(ordered))


async def test_a_card_on_another_host_is_fetched_without_the_credentials(
    tmp_path: Path, media: MediaServer
) -> None:
    model = FakeOpenAI()
    async with (
        model.serving() as model_url,
        whatsapp_stack(tmp_path, **model_settings(model_url), **LOOPBACK) as gateway,
    ):
        texts = await _share(gateway, f"http://localhost:{media.port}/card.vcf")
    assert texts == ["[contact]", READ]
    assert media.seen == [("localhost", "/card.vcf", None)]


async def test_twilios_redirect_elsewhere_goes_without_the_credentials(
    tmp_path: Path, media: MediaServer
) -> None:
    model = FakeOpenAI()
    async with (
        model.serving() as model_url,
        whatsapp_stack(tmp_path, **model_settings(model_url), **LOOPBACK) as gateway,
    ):
        texts = await _share(gateway, f"http://127.0.0.1:{media.port}/to-elsewhere.vcf")
    assert texts == ["[contact]", READ]
    assert media.seen == [
        ("127.0.0.1", "/to-elsewhere.vcf", BASIC),  # Twilio's host: the account's credentials
        ("localhost", "/card.vcf", None),
    ]


async def test_a_card_on_an_unlisted_internal_address_is_not_fetched(
    tmp_path: Path, media: MediaServer
) -> None:
    model = FakeOpenAI()
    async with (
        model.serving() as model_url,
        whatsapp_stack(tmp_path, **model_settings(model_url)) as gateway,
    ):
        texts = await _share(gateway, f"http://127.0.0.1:{media.port}/card.vcf")
        assert len(gateway.twilio.created) == 1  # answered all the same
    assert texts == ["[contact]"]
    assert media.seen == []


async def test_a_card_far_past_the_vcard_cap_is_not_read_whole(
    tmp_path: Path, media: MediaServer
) -> None:
    model = FakeOpenAI()
    async with (
        model.serving() as model_url,
        whatsapp_stack(tmp_path, **model_settings(model_url), **LOOPBACK) as gateway,
    ):
        texts = await _share(gateway, f"http://127.0.0.1:{media.port}/huge.vcf")
        await asyncio.wait_for(media.huge_done.wait(), 30)
    assert texts == ["[contact]"]
    assert [path for _, path, _ in media.seen] == ["/huge.vcf"]
    # Read up to 64 KiB; what else left the server sat in the sockets' buffers.
    assert media.written < 16 * MIB

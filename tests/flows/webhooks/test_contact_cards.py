"""A contact shared on WhatsApp: Twilio sends its vCard as a `text/vcard` attachment; before
the turn is answered the card is fetched with the account's credentials, read down to name and
number and stored as a version of the `[contact]` placeholder, which is what the model reads.
A card that cannot be fetched leaves the placeholder."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from sqlalchemy import select

from devtools.loopback import serving_on_loopback
from gateway.keys import SESSIONS
from gateway.storage.models import Message
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.whatsapp_stack import ACCOUNT, TOKEN, WhatsAppStack, whatsapp_stack

NUMBER = "+5511998765432"
CARD = (
    b"BEGIN:VCARD\r\nVERSION:3.0\r\nN:Souza;Ana;;;\r\nFN:Ana Souza\r\n"
    b"item1.TEL;waid=5511987654321:+55 11 98765-4321\r\nitem1.X-ABLabel:Celular\r\nEND:VCARD\r\n"
)

# Twilio's media host is on loopback here: listed as a host of the deployment's own.
LOOPBACK = {"RELAYDESK_FETCH_ALLOW": "127.0.0.1"}


class MediaHost:
    """Twilio's media host: the card, for the account's credentials only."""

    def __init__(self) -> None:
        self.requests = 0

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/media/{name}", self.media)
        return app

    async def media(self, request: web.Request) -> web.Response:
        self.requests += 1
        expected = "Basic " + base64.b64encode(f"{ACCOUNT}:{TOKEN}".encode()).decode()
        if request.headers.get("Authorization") != expected:
            return web.Response(status=401)
        if request.match_info["name"] != "card.vcf":
            return web.Response(status=404)
        return web.Response(body=CARD, content_type="text/vcard")


@pytest.fixture
async def host() -> AsyncIterator[tuple[MediaHost, str]]:
    media = MediaHost()
    async with serving_on_loopback(media.app()) as root:
        yield media, root


async def _share(gateway: WhatsAppStack, url: str) -> None:
    """A shared contact as Twilio's webhook documents it: `MessageType=contacts`, the card as
    `MediaUrl0` of type `text/vcard`, an empty `Body`."""
    params = inbound_params(f"MM{uuid.uuid4().hex}", f"whatsapp:{NUMBER}", "", account=ACCOUNT)
    params.update(
        MessageType="contacts", NumMedia="1", MediaContentType0="text/vcard", MediaUrl0=url
    )
    response = await post_signed(
        gateway.stack.client, params, token=TOKEN, public_url=gateway.public_url
    )
    assert response.status == 200


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_a_shared_contact_is_read_before_the_answer(
    tmp_path: Path, backend: str, host: tuple[MediaHost, str]
) -> None:
    media, root = host
    model = FakeOpenAI()
    async with (
        model.serving() as model_url,
        whatsapp_stack(tmp_path, backend, **model_settings(model_url), **LOOPBACK) as gateway,
    ):
        await _share(gateway, f"{root}/media/card.vcf")
        await gateway.stack.idle()
        async with gateway.stack.client.app[SESSIONS]() as session:
            rows = list(
                await session.scalars(
                    select(Message).where(Message.role == "user").order_by(Message.id)
                )
            )
        placeholder, card = rows
        assert placeholder.text == "[contact]"
        assert card.supersedes_id == placeholder.id
        assert card.text == "[contact] Ana Souza +55 11 98765-4321"
        assert card.media == placeholder.media
        assert media.requests == 1
        [call] = model.calls
        assert call.last_user_text.endswith("[contact] Ana Souza +55 11 98765-4321")


async def test_a_card_that_cannot_be_fetched_leaves_the_placeholder(
    tmp_path: Path, host: tuple[MediaHost, str]
) -> None:
    media, root = host
    model = FakeOpenAI()
    async with (
        model.serving() as model_url,
        whatsapp_stack(tmp_path, **model_settings(model_url), **LOOPBACK) as gateway,
    ):
        await _share(gateway, f"{root}/media/gone.vcf")
        await gateway.stack.idle()
        async with gateway.stack.client.app[SESSIONS]() as session:
            texts = list(await session.scalars(select(Message.text).where(Message.role == "user")))
        assert texts == ["[contact]"]
        assert media.requests >= 1
        [call] = model.calls
        assert call.last_user_text.endswith("[contact]")
        assert len(gateway.twilio.created) == 1  # answered all the same

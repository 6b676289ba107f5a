"""Attachments both ways on WhatsApp through a real gateway (SQLite and PostgreSQL): a photo
with a caption is stored as a reference and read by the model as `[image: caption]`; an
operator's attachment and one a reply names with its media marker (on a host of the tenant's
`media_hosts`) reach Twilio (the real twilio client, a local Twilio) as `MediaUrl`."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from gateway.keys import SESSIONS
from gateway.storage.models import Message
from tests.support.app_settings import AUTH
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.tenant_settings import save_domain_settings
from tests.support.whatsapp_stack import ACCOUNT, TOKEN, WhatsAppStack, until, whatsapp_stack

NUMBER = "+5511998765432"
BASE = "/v1/operator/conversations"
# Where Twilio keeps what a customer sent (the account's Media resource).
TWILIO_MEDIA = (
    f"https://api.twilio.com/2010-04-01/Accounts/{ACCOUNT}/Messages/MM{'1' * 32}/Media/ME{'2' * 32}"
)
CATALOGUE = "https://cdn.example.org/catalogo/verao-2026.pdf"

pytestmark = pytest.mark.parametrize("backend", ["embedded", "production"])


@asynccontextmanager
async def _gateway(tmp_path: Path, backend: str, model: FakeOpenAI) -> AsyncIterator[WhatsAppStack]:
    async with model.serving() as base_url:
        async with whatsapp_stack(tmp_path, backend, **model_settings(base_url)) as gateway:
            # The host the model's media markers may name (Twilio fetches the file).
            await save_domain_settings(gateway.stack, media_hosts=["cdn.example.org"])
            yield gateway


async def _photo(gateway: WhatsAppStack, caption: str) -> None:
    """A photo with a caption, as Twilio's webhook documents it (`MessageType=image`, the
    caption in `Body`, the file as `MediaUrl0`)."""
    params = inbound_params(f"MM{uuid.uuid4().hex}", f"whatsapp:{NUMBER}", caption, account=ACCOUNT)
    params.update(
        MessageType="image",
        NumMedia="1",
        MediaContentType0="image/jpeg",
        MediaUrl0=TWILIO_MEDIA,
    )
    response = await post_signed(
        gateway.stack.client, params, token=TOKEN, public_url=gateway.public_url
    )
    assert response.status == 200


async def _json(gateway: WhatsAppStack, method: str, path: str, **body: Any) -> tuple[int, Any]:
    client = gateway.stack.client
    if method == "GET":
        response = await client.get(path, headers=AUTH)
    else:
        response = await client.post(path, json=body, headers=AUTH)
    return response.status, await response.json()


async def test_a_photo_is_stored_by_reference_and_read_as_its_caption(
    tmp_path: Path, backend: str
) -> None:
    model = FakeOpenAI(reply="Recebi a foto, obrigado!")
    async with _gateway(tmp_path, backend, model) as gateway:
        await _photo(gateway, "O tênis chegou assim")
        await gateway.stack.idle()
        async with gateway.stack.client.app[SESSIONS]() as session:
            stored = await session.scalar(select(Message).where(Message.role == "user"))
        assert stored is not None
        assert stored.text == "[image: O tênis chegou assim]"
        assert stored.media == {
            "items": [
                {
                    "url": TWILIO_MEDIA,
                    "content_type": "image/jpeg",
                    "caption": "O tênis chegou assim",
                }
            ]
        }
        # The window the model read: the bracketed caption, never the URL.
        [call] = model.calls
        assert call.last_user_text.endswith("[image: O tênis chegou assim]")
        assert not any("api.twilio.com" in m["content"] for m in call.messages)
        [sent] = gateway.twilio.created
        assert sent["Body"] == "Recebi a foto, obrigado!" and "MediaUrl" not in sent

        # The operator's view of the conversation links the attachment.
        status, listed = await _json(gateway, "GET", BASE)
        [conversation] = listed["conversations"]
        status, detail = await _json(gateway, "GET", f"{BASE}/{conversation['id']}")
        assert status == 200
        first = detail["messages"][0]
        assert first["text"] == "[image: O tênis chegou assim]"
        assert first["media"] == [
            {
                "url": TWILIO_MEDIA,
                "content_type": "image/jpeg",
                "caption": "O tênis chegou assim",
                "filename": None,
            }
        ]


async def test_an_operator_sends_an_attachment(tmp_path: Path, backend: str) -> None:
    model = FakeOpenAI()
    async with _gateway(tmp_path, backend, model) as gateway:
        await gateway.say(NUMBER, "Vocês têm o catálogo de verão?")
        status, held = await _json(
            gateway,
            "POST",
            f"{BASE}/handoff",
            channel="whatsapp",
            external_id=NUMBER,
            reason="catálogo",
            actor="alice",
        )
        assert status == 200, held
        sent = len(gateway.twilio.created)
        path = f"{BASE}/{held['id']}/messages"
        status, refused = await _json(
            gateway, "POST", path, actor="alice", media=[{"url": "ftp://cdn.example.org/x.pdf"}]
        )
        assert (status, refused["error"]) == (400, "invalid_body")
        status, refused = await _json(gateway, "POST", path, actor="alice", text=" ", media=[])
        assert (status, refused["error"]) == (400, "empty_text")
        assert len(gateway.twilio.created) == sent

        status, written = await _json(
            gateway,
            "POST",
            path,
            actor="alice",
            media=[{"url": CATALOGUE, "content_type": "application/pdf", "caption": "Catálogo"}],
        )
        assert status == 202, written
        await until(lambda: len(gateway.twilio.created) == sent + 1)
        out = gateway.twilio.created[-1]
        assert (out["MediaUrl"], out["Body"], out["To"]) == (
            CATALOGUE,
            "Catálogo",
            f"whatsapp:{NUMBER}",
        )
        async with gateway.stack.client.app[SESSIONS]() as session:
            stored = await session.get(Message, written["message_id"])
        assert stored is not None and stored.text == ""
        assert stored.media == {
            "items": [{"url": CATALOGUE, "content_type": "application/pdf", "caption": "Catálogo"}]
        }


async def test_a_reply_attaches_what_its_media_marker_names(tmp_path: Path, backend: str) -> None:
    model = FakeOpenAI(
        reply=f"Claro! Segue o catálogo de verão.\n[[media: {CATALOGUE} | Catálogo verão 2026]]"
    )
    async with _gateway(tmp_path, backend, model) as gateway:
        await gateway.say(NUMBER, "Vocês têm o catálogo de verão?")
        [out] = gateway.twilio.created
        assert out["Body"] == "Claro! Segue o catálogo de verão."
        assert out["MediaUrl"] == CATALOGUE
        async with gateway.stack.client.app[SESSIONS]() as session:
            reply = await session.scalar(select(Message).where(Message.role == "assistant"))
        assert reply is not None and "[[media" not in reply.text
        assert reply.media == {
            "items": [
                {
                    "url": CATALOGUE,
                    "content_type": "application/pdf",
                    "caption": "Catálogo verão 2026",
                }
            ]
        }


async def test_a_reply_of_only_an_attachment_sends_it_and_leaves_no_empty_turn(
    tmp_path: Path, backend: str
) -> None:
    model = FakeOpenAI(
        reply_for=lambda call: (
            f"[[media: {CATALOGUE} | Catálogo]]" if "catálogo" in call.last_user_text else None
        )
    )
    async with _gateway(tmp_path, backend, model) as gateway:
        await gateway.say(NUMBER, "Manda o catálogo")
        [out] = gateway.twilio.created
        assert (out["MediaUrl"], out["Body"]) == (CATALOGUE, "Catálogo")  # the caption
        await gateway.say(NUMBER, "Obrigada!")
        # The next window: no empty assistant turn (providers refuse one).
        last = model.calls[-1]
        assert last.last_user_text.endswith("Obrigada!")
        assert all(m["content"].strip() for m in last.messages)
        assert [m["role"] for m in last.messages if m["role"] != "system"][-2:] != [
            "assistant",
            "assistant",
        ]

"""A web chat reply's attachments (from a host of the tenant's `media_hosts`) travel in its
`message` frame (`media`), live, in a reconnect's backlog and in the REST fallback, so the
widget can show them; a message without any has no `media` key, as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.shared_gateways import next_frame
from tests.support.stack import running_stack
from tests.support.tenant_settings import save_domain_settings
from tests.support.webchat import signed_visitor

CATALOGUE = "https://cdn.example.org/catalogo/verao-2026.pdf"


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_a_reply_frame_carries_the_attachment_its_marker_named(
    tmp_path: Path, backend: str
) -> None:
    model = FakeOpenAI(
        reply_for=lambda call: (
            f"Segue o catálogo. [[media: {CATALOGUE} | Catálogo]]"
            if "catálogo" in call.last_user_text
            else "Olá!"
        )
    )
    async with (
        model.serving() as model_url,
        running_stack(backend, tmp_path, **model_settings(model_url)) as stack,
    ):
        await save_domain_settings(stack, media_hosts=["cdn.example.org"])
        visitor = await signed_visitor(stack.client)
        socket = await stack.client.ws_connect("/webchat/ws")
        await socket.send_json(
            {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
        )
        assert (await next_frame(socket))["type"] == "ready"

        async def reply_to(text: str, client_id: str) -> dict[str, object]:
            await socket.send_json(
                {"type": "message", "text": text, "client_message_id": client_id}
            )
            while True:
                frame = await next_frame(socket)
                if frame["type"] == "message" and frame["role"] == "assistant":
                    return frame

        plain = await reply_to("oi", "c1")
        assert plain["text"] == "Olá!" and "media" not in plain
        attached = await reply_to("tem o catálogo?", "c2")
        assert attached["text"] == "Segue o catálogo."
        assert attached["media"] == [
            {
                "url": CATALOGUE,
                "content_type": "application/pdf",
                "caption": "Catálogo",
                "filename": None,
            }
        ]
        await socket.close()

        # Stored with the reply: the REST fallback and a reconnect's backlog carry it too.
        expected = attached["media"]
        response = await stack.client.get("/webchat/messages", params={"visitor_id": visitor})
        stored = {m["message_id"]: m for m in (await response.json())["messages"]}
        assert stored[attached["message_id"]]["media"] == expected
        assert "media" not in stored[plain["message_id"]]
        again = await stack.client.ws_connect("/webchat/ws")
        await again.send_json(
            {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
        )
        replayed = []
        while len(replayed) < 4:
            frame = await next_frame(again)
            if frame["type"] == "message":
                replayed.append(frame)
        assert [f.get("media") for f in replayed] == [None, None, None, expected]
        await again.close()

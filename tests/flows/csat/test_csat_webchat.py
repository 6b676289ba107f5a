"""The satisfaction question in the web chat: the reply frame carries the 1-5 buttons
(`choices`), and the visitor's tap (sent as the digit) is stored and thanked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp import ClientWebSocketResponse
from sqlalchemy import select

from gateway.storage.models_csat import CsatSurvey
from gateway.tenants import TenantSettings
from tests.support.app_settings import AUTH
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.shared_gateways import next_frame
from tests.support.stack import running_stack
from tests.support.tenant_settings import save_domain_settings
from tests.support.webchat import signed_visitor

BASE = "/v1/operator/conversations"
DEFAULTS = TenantSettings()


async def _assistant_frame(socket: ClientWebSocketResponse) -> dict[str, Any]:
    while True:
        frame = await next_frame(socket)
        if frame["type"] == "message" and frame["role"] == "assistant":
            return frame


async def test_the_widget_gets_buttons_and_the_tap_is_the_answer(tmp_path: Path) -> None:
    model = FakeOpenAI(reply="Olá!")
    async with (
        model.serving() as model_url,
        running_stack("embedded", tmp_path, **model_settings(model_url)) as stack,
    ):
        await save_domain_settings(stack, csat_enabled=True)
        visitor = await signed_visitor(stack.client)
        socket = await stack.client.ws_connect("/webchat/ws")
        await socket.send_json(
            {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
        )
        assert (await next_frame(socket))["type"] == "ready"
        await socket.send_json({"type": "message", "text": "oi", "client_message_id": "c1"})
        first = await _assistant_frame(socket)
        assert first["text"] == "Olá!" and "choices" not in first

        listed = await (await stack.client.get(BASE, headers=AUTH)).json()
        [conversation] = listed["conversations"]
        path = f"{BASE}/{conversation['id']}"
        for action in ("take", "handback"):
            response = await stack.client.post(
                f"{path}/{action}", json={"actor": "alice", "reason": "help"}, headers=AUTH
            )
            assert response.status == 200, await response.text()
        asked = await _assistant_frame(socket)
        assert asked["text"] == DEFAULTS.csat_question
        assert asked["author"] == "operator" and asked["author_name"] == "alice"
        assert asked["choices"] == [
            {"title": str(score), "payload": f"csat:{score}"} for score in range(1, 6)
        ]

        calls = len(model.calls)
        await socket.send_json({"type": "message", "text": "3", "client_message_id": "c2"})
        thanked = await _assistant_frame(socket)
        assert thanked["text"] == DEFAULTS.csat_thanks
        assert len(model.calls) == calls
        async with stack.sessions()() as session:
            [survey] = list(await session.scalars(select(CsatSurvey)))
        assert (survey.score, survey.person_took_part, survey.channel) == (3, True, "webchat")
        await socket.close()

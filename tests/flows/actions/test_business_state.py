"""The business's operational state and the list of actions reach the window's state slice; a
slow state endpoint costs a reply at most its timeout."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import jwt
from aiohttp import web

from tests.flows.actions.support import IDENTITY_KEY, acting_stack, save_settings, serving
from tests.support.openai_server import Call, FakeOpenAI
from tests.support.stack import Stack
from tests.support.webchat import signed_visitor


class Business:
    def __init__(self) -> None:
        self.audiences: list[str] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/state", self.state)
        app.router.add_post("/slow-state", self.slow)
        return app

    async def state(self, request: web.Request) -> web.Response:
        claims = jwt.decode(
            request.headers["X-Relaydesk-Identity"],
            IDENTITY_KEY,
            algorithms=["HS256"],
            audience="state",
        )
        self.audiences.append(claims["aud"])
        return web.json_response({"open_ticket": "T-981 reembolso pendente", "plan": "gold"})

    async def slow(self, request: web.Request) -> web.Response:
        await asyncio.sleep(3)
        return web.json_response({"open_ticket": "late"})


def _system(call: Call) -> str:
    return " ".join(m["content"] for m in call.messages if m["role"] == "system")


async def _ask(stack: Stack, text: str) -> float:
    visitor = await signed_visitor(stack.client)
    started = time.perf_counter()
    response = await stack.client.post(
        "/webchat/messages", json={"visitor_id": visitor, "text": text, "client_message_id": "c1"}
    )
    assert response.status == 202, await response.text()
    await stack.idle()
    return time.perf_counter() - started


async def test_the_state_and_the_actions_fill_the_state_slice(tmp_path: Path) -> None:
    business, model = Business(), FakeOpenAI()
    async with (
        serving(business.app()) as url,
        model.serving() as model_url,
        acting_stack(tmp_path, model_url) as stack,
    ):
        await save_settings(
            stack,
            {
                "state_endpoint": {"url": f"{url}/state"},
                "tools": [
                    {
                        "name": "order_status",
                        "description": "Where an order is.",
                        "min_link_level": "verified",
                        "endpoint": {"url": f"{url}/orders"},
                    }
                ],
            },
        )

        await _ask(stack, "e o meu reembolso?")

        system = _system(model.calls[0])
        assert "- open ticket: T-981 reembolso pendente" in system
        assert "- plan: gold" in system
        assert "- actions after verification: order_status" in system
        assert business.audiences == ["state"]


async def test_a_slow_state_endpoint_delays_the_reply_by_its_timeout_at_most(
    tmp_path: Path,
) -> None:
    business, model = Business(), FakeOpenAI()
    async with (
        serving(business.app()) as url,
        model.serving() as model_url,
        acting_stack(tmp_path, model_url) as stack,
    ):
        await save_settings(
            stack,
            {
                "state_endpoint": {"url": f"{url}/slow-state"},
                "state_timeout_ms": 300,
            },
        )

        took = await _ask(stack, "oi")

        assert took < 2.0  # the endpoint answers after 3 s; the reply did not wait for it
        assert "open ticket" not in _system(model.calls[0])

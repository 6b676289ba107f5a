"""Actions through the whole answer step: a web chat message, a local OpenAI-compatible model
that calls tools, a local business API checking the identity assertion."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import pytest
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from sqlalchemy import select

from gateway.http.jwks import SIGNER
from gateway.storage.models import Message, OutboundEvent, TurnRow
from gateway.tools.assertion import IdentityClaims
from identity.levels import LinkLevel
from tests.flows.actions.support import IDENTITY_KEY, acting_stack, save_settings, serving
from tests.support.openai_server import Call, FakeOpenAI, model_settings
from tests.support.stack import Stack, running_stack
from tests.support.webchat import signed_visitor


@dataclass
class OrdersApi:
    """A business API: answers an order's status, keeps every request's assertion and body."""

    seen: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/orders/status", self.status)
        return app

    async def status(self, request: web.Request) -> web.Response:
        self.seen.append((request.headers["X-Relaydesk-Identity"], await request.json()))
        return web.json_response({"order_id": "4471", "status": "saiu para entrega"})


def _order_status(url: str, level: str) -> dict[str, Any]:
    return {
        "name": "order_status",
        "description": "Where one of the customer's orders is.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
        "min_link_level": level,
        "endpoint": {"url": f"{url}/orders/status"},
    }


def _calls_order_status_once(call: Call) -> list[tuple[str, str]] | None:
    """A model that looks the order up (naming another customer, too) before it answers."""
    if call.tool_results:
        return None
    return [("order_status", '{"order_id": "4471", "customer_id": "cus_someone_else"}')]


def _answers_from_the_result(call: Call) -> str | None:
    results = call.tool_results
    if not results:
        return None
    return "Seu pedido: " + json.loads(results[0]["content"]).get("status", "?")


async def _ask(stack: Stack, text: str) -> int:
    visitor = await signed_visitor(stack.client)
    response = await stack.client.post(
        "/webchat/messages", json={"visitor_id": visitor, "text": text, "client_message_id": "c1"}
    )
    assert response.status == 202, await response.text()
    message_id = int((await response.json())["message_id"])
    await stack.idle()
    return message_id


async def _reply_and_customer(stack: Stack, message_id: int) -> tuple[str, str, dict[str, Any]]:
    async with stack.sessions()() as session:
        turn = await session.scalar(select(TurnRow).where(TurnRow.inbound_message_id == message_id))
        assert turn is not None and turn.reply_message_id is not None
        reply = await session.get(Message, turn.reply_message_id)
        assert reply is not None
        return reply.text, turn.customer_id, dict(turn.report or {})


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_model_call_reaches_the_api_as_the_conversations_customer(
    tmp_path: Path, streaming: bool
) -> None:
    api = OrdersApi()
    model = FakeOpenAI(
        streaming=streaming,
        tool_calls_for=_calls_order_status_once,
        reply_for=_answers_from_the_result,
    )
    async with (
        serving(api.app()) as api_url,
        model.serving() as model_url,
        acting_stack(tmp_path, model_url) as stack,
    ):
        await save_settings(stack, {"tools": [_order_status(api_url, "anonymous")]})

        message_id = await _ask(stack, "cadê meu pedido 4471?")

        reply, customer_id, report = await _reply_and_customer(stack, message_id)
        assert reply == "Seu pedido: saiu para entrega"
        [(assertion, body)] = api.seen
        assert body == {"order_id": "4471"}  # the model's customer_id went nowhere
        claims = jwt.decode(assertion, IDENTITY_KEY, algorithms=["HS256"], audience="order_status")
        assert claims["sub"] == customer_id and claims["link_level"] == "anonymous"
        assert claims["channel"] == "webchat"
        first, second = model.calls
        assert first.tool_names == ["order_status"]
        assert second.tool_results[0]["content"] == json.dumps(
            {"order_id": "4471", "status": "saiu para entrega"}
        )
        assert [entry["status"] for entry in report["actions"]] == ["ok"]
        assert report["actions"][0]["dropped"] == ["customer_id"]
        scraped = await (await stack.client.get("/metrics")).text()
        assert 'relaydesk_action_calls_total{outcome="ok",tool="order_status"} 1.0' in scraped


async def test_an_anonymous_visitor_is_never_offered_a_verified_action(tmp_path: Path) -> None:
    api = OrdersApi()
    # A model that calls the verified action anyway, though only the open one was offered.
    model = FakeOpenAI(tool_calls_for=_calls_order_status_once, reply="Não posso ver isso.")
    opening_hours = {
        "name": "opening_hours",
        "description": "The store's opening hours.",
        "min_link_level": "anonymous",
        "endpoint": {"url": "http://127.0.0.1:9/hours"},
    }
    async with (
        serving(api.app()) as api_url,
        model.serving() as model_url,
        acting_stack(tmp_path, model_url) as stack,
    ):
        await save_settings(stack, {"tools": [opening_hours, _order_status(api_url, "verified")]})

        message_id = await _ask(stack, "cadê o pedido 4471 da Ana?")

        reply, _, report = await _reply_and_customer(stack, message_id)
        first, second = model.calls
        # The verified action is held back; a code to verify is offered in its place.
        assert first.tool_names == ["opening_hours", "start_verification"]
        assert api.seen == []  # the call was refused before any request
        assert second.tool_results[0]["content"].startswith('{"error": "refused, nothing was sent')
        assert reply == "Não posso ver isso."
        assert [entry["status"] for entry in report["actions"]] == ["refused"]


async def test_a_model_that_calls_where_words_are_due_gets_the_fallback(tmp_path: Path) -> None:
    model = FakeOpenAI(tool_calls_for=lambda call: [("order_status", "{}")])
    async with (
        model.serving() as model_url,
        running_stack("embedded", tmp_path, **model_settings(model_url)) as stack,
    ):
        message_id = await _ask(stack, "oi")

        reply, _, _ = await _reply_and_customer(stack, message_id)
        assert "problema técnico" in reply  # the fallback (in Portuguese), not an empty reply
        assert model.calls[0].tools is None


async def test_the_last_round_must_answer_in_words(tmp_path: Path) -> None:
    api = OrdersApi()
    # A model that would call forever.
    model = FakeOpenAI(
        tool_calls_for=lambda call: (
            None if call.tool_choice == "none" else [("order_status", '{"order_id": "4471"}')]
        ),
        reply="Pronto.",
    )
    async with (
        serving(api.app()) as api_url,
        model.serving() as model_url,
        acting_stack(tmp_path, model_url) as stack,
    ):
        await save_settings(
            stack, {"tools": [_order_status(api_url, "anonymous")], "max_tool_rounds": 2}
        )

        message_id = await _ask(stack, "cadê meu pedido?")

        reply, _, report = await _reply_and_customer(stack, message_id)
        assert reply == "Pronto."
        assert len(api.seen) == 2 and len(model.calls) == 3
        assert model.calls[-1].tool_choice == "none"
        assert len(report["actions"]) == 2


async def test_the_key_set_serves_the_public_key_that_verifies_assertions(tmp_path: Path) -> None:
    pem = (
        Ed25519PrivateKey.generate()
        .private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        .decode()
    )
    async with running_stack(
        "embedded", tmp_path, RELAYDESK_TOOL_IDENTITY_PRIVATE_KEY=pem
    ) as stack:
        response = await stack.client.get("/.well-known/jwks.json")
        assert response.status == 200
        [published] = (await response.json())["keys"]
        token = stack.client.app[SIGNER].sign(
            "order_status", IdentityClaims("cus_ana", LinkLevel.VERIFIED, "whatsapp", "c1")
        )

    claims = jwt.decode(
        token, jwt.PyJWK(published).key, algorithms=["EdDSA"], audience="order_status"
    )
    assert claims["sub"] == "cus_ana" and "d" not in published


async def test_facts_a_tool_declares_reach_the_next_window_with_the_tool_as_source(
    tmp_path: Path,
) -> None:
    api = OrdersApi()
    model = FakeOpenAI(
        tool_calls_for=lambda call: (
            _calls_order_status_once(call) if "4471" in call.last_user_text else None
        ),
        reply_for=_answers_from_the_result,
        reply="Certo.",
    )
    async with (
        serving(api.app()) as api_url,
        model.serving() as model_url,
        acting_stack(tmp_path, model_url) as stack,
    ):
        tool = {
            **_order_status(api_url, "anonymous"),
            "scopes": ["public"],  # the facts' scope: an anonymous visitor sees public ones
            "facts": {"/status": "last_order_status"},
        }
        await save_settings(stack, {"tools": [tool]})
        visitor = await signed_visitor(stack.client)
        for number, text in enumerate(["cadê meu pedido 4471?", "e agora?"]):
            response = await stack.client.post(
                "/webchat/messages",
                json={"visitor_id": visitor, "text": text, "client_message_id": f"c{number}"},
            )
            assert response.status == 202, await response.text()
            await stack.idle()

        later = model.calls[-1]
        assert later.last_user_text == "e agora?"
        system = " ".join(m["content"] for m in later.messages if m["role"] == "system")
        assert '"saiu para entrega" (from tool:order_status)' in system


async def test_each_call_is_announced_as_an_event(tmp_path: Path) -> None:
    api = OrdersApi()
    model = FakeOpenAI(tool_calls_for=_calls_order_status_once, reply_for=_answers_from_the_result)
    async with (
        serving(api.app()) as api_url,
        model.serving() as model_url,
        acting_stack(
            tmp_path,
            model_url,
            RELAYDESK_EVENTS_URL="http://127.0.0.1:9/events",
            RELAYDESK_EVENTS_SECRET="an-events-secret-of-some-length",
        ) as stack,
    ):
        await save_settings(stack, {"tools": [_order_status(api_url, "anonymous")]})

        message_id = await _ask(stack, "cadê meu pedido 4471?")

        _, customer_id, _ = await _reply_and_customer(stack, message_id)
        async with stack.sessions()() as session:
            payloads = list(
                await session.scalars(
                    select(OutboundEvent.payload).where(OutboundEvent.kind == "tool.called")
                )
            )
        [payload] = payloads
        announced = json.dumps(payload)
        assert '"tool": "order_status"' in announced and '"outcome": "ok"' in announced
        assert customer_id in announced and "order_id" not in announced  # no arguments

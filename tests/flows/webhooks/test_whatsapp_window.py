"""WhatsApp's 24-hour window through a real gateway and the real twilio client: a reply due
outside it goes as the tenant's template (Twilio receives ContentSid and ContentVariables, not
Body) or is held for operators; Twilio's 63016 — answered at once or in a status callback —
turns free text into the template once and closes the window; operators see the window. The
Cloud API's 131047 likewise, through httpx to a local Graph API."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.keys import DELIVER, SESSIONS
from gateway.runtime.clock import utcnow
from gateway.storage.models import Conversation, Message, OutboundMessage, TurnRow
from gateway.storage.records import NewFact
from gateway.storage.repositories import facts, tenants
from tests.flows.webhooks import test_whatsapp_cloud_webhook as cloud
from tests.support.app_settings import AUTH
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.signed_twilio import post_signed
from tests.support.stack import Stack
from tests.support.whatsapp_stack import ACCOUNT, TOKEN, WhatsAppStack, until, whatsapp_stack

NUMBER = "+5511998765432"
BASE = "/v1/operator/conversations"
CONTENT_SID = "HX" + "b" * 32
REENGAGE: dict[str, Any] = {
    "content_sid": CONTENT_SID,
    "variables": {"1": "name", "2": "=Loja Azul"},
}

BACKENDS = pytest.mark.parametrize("backend", ["embedded", "production"])


def _sessions(stack: Stack) -> async_sessionmaker[AsyncSession]:
    app = stack.client.app
    assert app is not None
    sessions: async_sessionmaker[AsyncSession] = app[SESSIONS]
    return sessions


async def _tenant(stack: Stack, *, outside: str | None = "reengage", **more: Any) -> None:
    settings: dict[str, Any] = {
        "whatsapp_templates": {"reengage": REENGAGE, **more},
        "outside_window_template": outside,
    }
    async with _sessions(stack).begin() as session:
        await tenants.save_tenant_settings(session, domain="default", settings=settings)


async def _age_window(stack: Stack, hours: float) -> None:
    """The customer's last message was `hours` ago (as if the clock had moved on)."""
    async with _sessions(stack).begin() as session:
        await session.execute(
            update(Conversation).values(last_inbound_at=utcnow() - timedelta(hours=hours))
        )


async def _fact(stack: Stack, key: str, value: str) -> None:
    """A fact of the customer, sourced to their first message."""
    async with _sessions(stack).begin() as session:
        first = (
            await session.scalars(
                select(Message).where(Message.role == "user").order_by(Message.id).limit(1)
            )
        ).one()
        await facts.record_fact(
            session, first.customer_id, NewFact(key, value, "profile", first.id)
        )


async def _conversation(stack: Stack) -> dict[str, Any]:
    listed = await (await stack.client.get(BASE, headers=AUTH)).json()
    (found,) = [c for c in listed["conversations"] if c["channel"] == "whatsapp"]
    detail = await (await stack.client.get(f"{BASE}/{found['id']}", headers=AUTH)).json()
    assert detail["window"] == found["window"]
    assert detail["held_replies"] == found["held_replies"]
    return dict(detail)


async def _window_closed_at(stack: Stack) -> Any:
    async with _sessions(stack)() as session:
        return await session.scalar(select(Conversation.window_closed_at))


async def _deliveries(stack: Stack) -> list[str | None]:
    async with _sessions(stack)() as session:
        return list(await session.scalars(select(TurnRow.delivery_status).order_by(TurnRow.id)))


def _templates(gateway: WhatsAppStack) -> list[dict[str, str]]:
    return [form for form in gateway.twilio.created if "ContentSid" in form]


def _is_reengage(form: dict[str, str], name: str = "Ana") -> bool:
    return (
        form.get("ContentSid") == CONTENT_SID
        and json.loads(form["ContentVariables"]) == {"1": name, "2": "Loja Azul"}
        and "Body" not in form
        and form["To"] == f"whatsapp:{NUMBER}"
    )


async def _status_callback(gateway: WhatsAppStack, sid: str, status: str, code: str) -> None:
    params = {
        "MessageSid": sid,
        "MessageStatus": status,
        "ErrorCode": code,
        "AccountSid": ACCOUNT,
        "ChannelPrefix": "whatsapp",
    }
    response = await post_signed(
        gateway.stack.client,
        params,
        token=TOKEN,
        public_url=gateway.public_url,
        path="/webhooks/twilio/status",
    )
    assert response.status == 204


async def _sids(stack: Stack) -> list[str]:
    async with _sessions(stack)() as session:
        return list(
            await session.scalars(
                select(OutboundMessage.provider_message_id).order_by(OutboundMessage.id)
            )
        )


@BACKENDS
async def test_a_reply_that_waited_past_the_window_goes_as_the_template(
    tmp_path: Path, backend: str
) -> None:
    slow = asyncio.Event()
    model = FakeOpenAI(hold_for=lambda call: slow if "pedido" in call.last_user_text else None)
    async with (
        model.serving() as model_url,
        whatsapp_stack(tmp_path, backend, **model_settings(model_url)) as gateway,
    ):
        stack = gateway.stack
        await gateway.say(NUMBER, "Oi, sou a Ana")
        await _tenant(stack)
        await _fact(stack, "name", "Ana")
        sent = len(gateway.twilio.created)
        assert "Body" in gateway.twilio.created[-1]  # inside the window: free text

        await gateway.post(NUMBER, "Cadê meu pedido?")
        await until(lambda: any("pedido" in c.last_user_text for c in model.calls))
        # The model takes 25 hours: by the sender's clock the window closed meanwhile (and the
        # stored window is aged to match, for what operators see).
        windows = stack.app[DELIVER].windows
        assert windows is not None
        windows.clock = lambda: utcnow() + timedelta(hours=25)
        await _age_window(stack, 25)
        slow.set()
        await stack.idle()

        assert len(gateway.twilio.created) == sent + 1
        assert _is_reengage(gateway.twilio.created[-1])
        assert (await _deliveries(stack))[-1] == "template"
        window = (await _conversation(stack))["window"]
        assert window["open"] is False and window["closed_by_provider"] is False


@BACKENDS
async def test_a_retried_reply_with_no_template_is_held_and_operators_see_why(
    tmp_path: Path, backend: str
) -> None:
    async with whatsapp_stack(tmp_path, backend) as gateway:
        stack, twilio = gateway.stack, gateway.twilio
        await _tenant(stack, outside=None)
        twilio.fail_next = [503] * 4  # the whole first delivery fails: it is retried later
        await gateway.post(NUMBER, "Oi")
        await stack.idle()
        assert await _deliveries(stack) == ["retry"]
        created = len(twilio.created)

        await _age_window(stack, 25)
        await stack.app[DELIVER].retry_deliveries()

        assert len(twilio.created) == created  # nothing went
        assert await _deliveries(stack) == ["held"]
        detail = await _conversation(stack)
        assert detail["window"]["open"] is False
        assert detail["held_replies"] == 1
        (reply,) = [m for m in detail["messages"] if m["role"] == "assistant"]
        assert reply["delivery"]["status"] == "held"
        assert "24-hour window" in reply["delivery"]["error"]
        assert "outside_window_template" in reply["delivery"]["error"]
        # Held for good: a later sweep does not send it.
        await stack.app[DELIVER].retry_deliveries()
        assert len(twilio.created) == created

        # The customer writes again: the window reopens, the new reply goes as free text and
        # the conversation is no longer marked.
        await gateway.say(NUMBER, "Alguém aí?")
        assert "Body" in twilio.created[-1]
        detail = await _conversation(stack)
        assert detail["window"]["open"] is True and detail["held_replies"] == 0


@BACKENDS
async def test_a_refused_free_form_send_goes_once_as_the_template(
    tmp_path: Path, backend: str
) -> None:
    async with whatsapp_stack(tmp_path, backend) as gateway:
        stack, twilio = gateway.stack, gateway.twilio
        await gateway.say(NUMBER, "Oi, sou a Ana")
        await _tenant(stack)
        await _fact(stack, "name", "Ana")
        attempts = twilio.attempts
        # Our clock says the window is open; Twilio says it is not.
        twilio.fail_next = [(400, 63016)]
        await gateway.post(NUMBER, "Ainda estou aqui")
        await stack.idle()

        assert twilio.attempts == attempts + 2  # the refused free text, then the template
        assert len(_templates(gateway)) == 1 and _is_reengage(_templates(gateway)[0])
        assert (await _deliveries(stack))[-1] == "template"
        assert await _window_closed_at(stack) is not None
        window = (await _conversation(stack))["window"]
        assert window == {**window, "open": False, "closed_by_provider": True}


@BACKENDS
async def test_a_63016_status_callback_turns_the_reply_into_the_template_exactly_once(
    tmp_path: Path, backend: str
) -> None:
    async with whatsapp_stack(tmp_path, backend) as gateway:
        stack, twilio = gateway.stack, gateway.twilio
        await _tenant(stack)
        await gateway.post(NUMBER, "Oi")
        await stack.idle()
        await _fact(stack, "name", "Ana")
        assert "Body" in twilio.created[-1]  # Twilio accepted the free text (201)…
        (free_sid,) = await _sids(stack)
        assert await _window_closed_at(stack) is None

        # … and reports 63016 later, in the status callback.
        await _status_callback(gateway, free_sid, "undelivered", "63016")
        assert await _window_closed_at(stack) is not None
        await stack.app[DELIVER].retry_deliveries()
        assert len(_templates(gateway)) == 1 and _is_reengage(_templates(gateway)[0])
        assert await _deliveries(stack) == ["template"]

        # A repeated callback, and even a refusal of the template itself, send nothing more.
        template_sid = (await _sids(stack))[-1]
        await _status_callback(gateway, free_sid, "failed", "63016")
        await _status_callback(gateway, template_sid, "failed", "63016")
        await stack.app[DELIVER].retry_deliveries()
        await stack.idle()
        assert len(twilio.created) == 2 and len(_templates(gateway)) == 1
        assert (await _conversation(stack))["window"]["closed_by_provider"] is True


@BACKENDS
@pytest.mark.parametrize("configured", [True, False])
async def test_an_operator_message_the_next_morning_goes_as_the_template_or_is_held(
    tmp_path: Path, backend: str, configured: bool
) -> None:
    async with whatsapp_stack(tmp_path, backend) as gateway:
        stack, twilio = gateway.stack, gateway.twilio
        await gateway.say(NUMBER, "Oi, sou a Ana")
        await _tenant(stack, outside="reengage" if configured else None)
        await _fact(stack, "name", "Ana")
        conversation = await _conversation(stack)
        took = await stack.client.post(
            f"{BASE}/{conversation['id']}/take",
            json={"reason": "follow up", "actor": "alice"},
            headers=AUTH,
        )
        assert took.status == 200
        await _age_window(stack, 25)  # the operator answers the next morning
        created = len(twilio.created)

        written = await stack.client.post(
            f"{BASE}/{conversation['id']}/messages",
            json={"text": "Bom dia! Seu pedido saiu.", "actor": "alice"},
            headers=AUTH,
        )
        assert written.status == 202
        message_id = (await written.json())["message_id"]
        await stack.app[DELIVER].flush(f"{conversation['customer_id']}:whatsapp")

        detail = await _conversation(stack)
        (mine,) = [m for m in detail["messages"] if m["id"] == message_id]
        if configured:
            assert len(twilio.created) == created + 1
            assert _is_reengage(twilio.created[-1])
            assert mine["delivery"]["status"] == "template"
        else:
            assert len(twilio.created) == created
            assert mine["delivery"]["status"] == "held"
            assert "24-hour window" in mine["delivery"]["error"]
            assert detail["held_replies"] == 1
        assert mine["text"] == "Bom dia! Seu pedido saiu."  # stored as written


@BACKENDS
async def test_the_template_endpoint_fills_a_variable_from_a_fact(
    tmp_path: Path, backend: str
) -> None:
    follow_up = {"content_sid": "HX" + "c" * 32, "variables": {"1": "name", "2": "order_id"}}
    async with whatsapp_stack(tmp_path, backend) as gateway:
        stack, twilio = gateway.stack, gateway.twilio
        await gateway.say(NUMBER, "Oi, sou a Ana")
        await _tenant(stack, follow_up=follow_up)
        conversation = await _conversation(stack)
        path = f"{BASE}/{conversation['id']}/template"

        async def post(**body: Any) -> tuple[int, Any]:
            response = await stack.client.post(path, json=body, headers=AUTH)
            return response.status, await response.json()

        assert (await post(name="follow_up", actor="alice"))[0] == 409  # not held by alice
        took = await stack.client.post(
            f"{BASE}/{conversation['id']}/take",
            json={"reason": "follow up", "actor": "alice"},
            headers=AUTH,
        )
        assert took.status == 200
        status, refused = await post(name="follow_up", actor="alice", variables={"2": "PED-42"})
        assert (status, refused["error"]) == (400, "missing_variable")  # no name known yet
        assert (await post(name="nope", actor="alice"))[1]["error"] == "unknown_template"
        missing = await stack.client.post(
            f"{BASE}/no-such-conversation/template", json={"name": "follow_up"}, headers=AUTH
        )
        assert missing.status == 404

        await _fact(stack, "name", "Ana")
        created = len(twilio.created)
        status, sent = await post(name="follow_up", actor="alice", variables={"2": "PED-42"})
        assert status == 202, sent
        assert sent["variables"] == {"1": "Ana", "2": "PED-42"}
        await stack.app[DELIVER].flush(f"{conversation['customer_id']}:whatsapp")

        assert len(twilio.created) == created + 1
        form = twilio.created[-1]
        assert form["ContentSid"] == follow_up["content_sid"] and "Body" not in form
        assert json.loads(form["ContentVariables"]) == {"1": "Ana", "2": "PED-42"}
        detail = await _conversation(stack)
        (stored,) = [m for m in detail["messages"] if m["id"] == sent["message_id"]]
        assert (stored["author"], stored["actor"]) == ("operator", "alice")
        assert stored["delivery"]["status"] == "template"
        audit = await (await stack.client.get("/v1/operator/audit", headers=AUTH)).json()
        entries = [e for e in audit["audit"] if e["action"] == "conversation.template"]
        assert entries and entries[0]["details"]["variables"] == {"1": "Ana", "2": "PED-42"}


@BACKENDS
async def test_templates_are_only_for_whatsapp_conversations(tmp_path: Path, backend: str) -> None:
    async with whatsapp_stack(tmp_path, backend) as gateway:
        stack = gateway.stack
        await _tenant(stack)
        held = await stack.client.post(
            f"{BASE}/handoff",
            json={"channel": "telegram", "external_id": "12345", "reason": "x", "actor": "alice"},
            headers=AUTH,
        )
        assert held.status == 200
        conversation = await held.json()
        response = await stack.client.post(
            f"{BASE}/{conversation['id']}/template",
            json={"name": "reengage", "actor": "alice"},
            headers=AUTH,
        )
        assert response.status == 400
        assert (await response.json())["error"] == "not_whatsapp"
        listed = await (await stack.client.get(BASE, headers=AUTH)).json()
        (telegram,) = listed["conversations"]
        assert telegram["window"] is None


# The Cloud API: the same rules, the template sent as Graph's `template` message.

CLOUD_REENGAGE: dict[str, Any] = {
    "name": "reengage_pt",
    "language": "pt_BR",
    "variables": {"1": "name", "2": "=Loja Azul"},
}


def _cloud_template(body: dict[str, Any]) -> bool:
    return body.get("type") == "template" and body["template"] == {
        "name": "reengage_pt",
        "language": {"code": "pt_BR"},
        "components": [
            {
                "type": "body",
                "parameters": [
                    {"type": "text", "text": "Ana"},
                    {"type": "text", "text": "Loja Azul"},
                ],
            }
        ],
    }


async def _cloud_tenant(stack: Stack) -> None:
    settings = {
        "whatsapp_templates": {"reengage": CLOUD_REENGAGE},
        "outside_window_template": "reengage",
    }
    async with _sessions(stack).begin() as session:
        await tenants.save_tenant_settings(session, domain="default", settings=settings)


@BACKENDS
async def test_on_the_cloud_api_a_131047_answer_goes_once_as_the_template(
    tmp_path: Path, backend: str
) -> None:
    thinking = asyncio.Event()
    model = FakeOpenAI(hold_for=lambda call: thinking)
    async with (
        model.serving() as model_url,
        cloud._gateway(tmp_path, backend, **model_settings(model_url)) as (stack, graph),
    ):
        await _cloud_tenant(stack)
        await cloud._post(stack, cloud._text("Oi, sou a Ana"))
        await until(lambda: len(model.calls) == 1)
        await _fact(stack, "name", "Ana")  # learnt while the model writes
        # Our clock says the window is open; Meta says it is not.
        graph.fail_next(131047, "Re-engagement message", subcode=2494010)
        thinking.set()
        await stack.idle()
        texts = [r for r in graph.requests if r.json and r.json.get("type") == "text"]
        assert len(texts) == 1  # the refused free text, once
        (sent,) = graph.sent()
        assert _cloud_template(sent)
        assert await _deliveries(stack) == ["template"]
        assert await _window_closed_at(stack) is not None


@BACKENDS
async def test_on_the_cloud_api_a_131047_status_turns_the_reply_into_the_template_once(
    tmp_path: Path, backend: str
) -> None:
    async with cloud._gateway(tmp_path, backend) as (stack, graph):
        await _cloud_tenant(stack)
        await cloud._post(stack, cloud._text("Oi, sou a Ana"))
        await stack.idle()
        await _fact(stack, "name", "Ana")
        (wamid,) = graph.message_ids
        failed = {
            "id": wamid,
            "status": "failed",
            "timestamp": "1700000000",
            "recipient_id": cloud.WA_ID,
            "errors": [{"code": 131047, "title": "Re-engagement message"}],
        }
        assert (await cloud._post(stack, cloud._statuses(failed))).status == 200
        await stack.app[DELIVER].retry_deliveries()
        await stack.idle()
        sent = graph.sent()
        assert [body["type"] for body in sent] == ["text", "template"]
        assert _cloud_template(sent[-1])
        # The template refused too: nothing more goes.
        again = {**failed, "id": graph.message_ids[-1]}
        assert (await cloud._post(stack, cloud._statuses(again))).status == 200
        await stack.app[DELIVER].retry_deliveries()
        assert len(graph.sent()) == 2
        assert await _deliveries(stack) == ["template"]

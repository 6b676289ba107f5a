"""WhatsApp through Meta's Cloud API in a real gateway: signed webhooks in (recorded bodies),
replies out through httpx to a local server speaking the Graph API; a bad signature or body
stores nothing; a repeated wamid is stored once; statuses only move forward; a Cloud sender is
the same customer as the same number through Twilio."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from devtools.loopback import serving_on_loopback
from gateway.keys import SESSIONS
from gateway.storage.models import (
    ChannelIdentity,
    Customer,
    Message,
    OutboundMessage,
    TurnRow,
)
from tests.flows.webhooks.test_voice_notes import AUDIO, VoiceServices
from tests.support.context_api import post_context
from tests.support.fixtures import FIXTURES
from tests.support.graph_server import ACCESS_TOKEN, PHONE_NUMBER_ID, LocalGraph
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.stack import API_KEY, Stack, inbound_rows, running_stack
from tests.support.twilio_server import FakeTwilio

PATH = "/webhooks/whatsapp/cloud"
SECRET = "app-secret-for-tests"
VERIFY = "verify-token-for-tests"
WA_ID = "5511999990000"
CASES: dict[str, dict[str, Any]] = json.loads(
    (FIXTURES / "whatsapp_cloud/pywa_message.json").read_text()
)
STATUSES: dict[str, dict[str, Any]] = json.loads(
    (FIXTURES / "whatsapp_cloud/pywa_message_status.json").read_text()
)


def _cloud(base: str) -> dict[str, Any]:
    return {
        "WHATSAPP_CLOUD_API_BASE": base,
        "WHATSAPP_CLOUD_VERIFY_TOKEN": VERIFY,
        "WHATSAPP_CLOUD_APP_SECRET": SECRET,
        "WHATSAPP_CLOUD_ACCESS_TOKEN": ACCESS_TOKEN,
        "WHATSAPP_CLOUD_PHONE_NUMBER_ID": PHONE_NUMBER_ID,
    }


@asynccontextmanager
async def _gateway(
    tmp_path: Path, backend: str = "embedded", **more: Any
) -> AsyncIterator[tuple[Stack, LocalGraph]]:
    graph = LocalGraph()
    async with (
        graph.serving() as base,
        running_stack(backend, tmp_path, **_cloud(base), **more) as stack,
    ):
        yield stack, graph


def _case(
    name: str, *, wamid: str | None = None, wa_id: str = WA_ID, **message: Any
) -> dict[str, Any]:
    """A recorded body addressed to our business number, from `wa_id`, as message `wamid`."""
    body = copy.deepcopy(CASES[name])
    value = body["entry"][0]["changes"][0]["value"]
    value["metadata"]["phone_number_id"] = PHONE_NUMBER_ID
    for contact in value.get("contacts", []):
        contact["wa_id"] = wa_id
    for item in value.get("messages", []):
        item.update({"from": wa_id, "id": wamid or f"wamid.{uuid.uuid4().hex}", **message})
    return body


def _text(text: str, *, wamid: str | None = None, wa_id: str = WA_ID) -> dict[str, Any]:
    return _case("text", wamid=wamid, wa_id=wa_id, text={"body": text})


def _statuses(*items: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(STATUSES["sent"])
    value = body["entry"][0]["changes"][0]["value"]
    value["metadata"]["phone_number_id"] = PHONE_NUMBER_ID
    value["statuses"] = list(items)
    return body


def _signature(raw: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


async def _post(stack: Stack, body: dict[str, Any] | bytes, *, signature: str | None = None) -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if signature != "":
        headers["X-Hub-Signature-256"] = signature or _signature(raw)
    response = await stack.client.post(PATH, data=raw, headers=headers)
    await response.read()
    return response


def _sessions(stack: Stack) -> async_sessionmaker[AsyncSession]:
    app = stack.client.app
    assert app is not None
    sessions: async_sessionmaker[AsyncSession] = app[SESSIONS]
    return sessions


async def _count(stack: Stack, model: Any, *where: Any) -> int:
    async with _sessions(stack)() as session:
        return int(await session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


# The subscription check


async def test_the_subscription_check_answers_the_challenge_as_text(tmp_path: Path) -> None:
    async with _gateway(tmp_path) as (stack, _):
        query = {"hub.mode": "subscribe", "hub.verify_token": VERIFY, "hub.challenge": "1158201444"}
        ok = await stack.client.get(PATH, params=query)
        assert ok.status == 200 and ok.content_type == "text/plain"
        assert await ok.text() == "1158201444"
        for wrong in ({**query, "hub.verify_token": "guess"}, {"hub.mode": "subscribe"}):
            refused = await stack.client.get(PATH, params=wrong)
            assert refused.status == 403
            assert (await refused.json())["error"] == "invalid_signature"
            assert "1158201444" not in await refused.text()


async def test_an_unconfigured_gateway_refuses_the_subscription_and_every_post(
    tmp_path: Path,
) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        query = {"hub.mode": "subscribe", "hub.verify_token": "", "hub.challenge": "1"}
        assert (await stack.client.get(PATH, params=query)).status == 403
        assert (await _post(stack, _text("oi"))).status == 403
        assert await inbound_rows(stack) == 0


# Messages in, replies out


async def test_a_signed_message_is_stored_and_answered_through_the_graph_api(
    tmp_path: Path,
) -> None:
    async with _gateway(tmp_path) as (stack, graph):
        response = await _post(stack, _text("Olá, meu pedido chegou?", wamid="wamid.first"))
        assert response.status == 200
        await stack.idle()
        [sent] = graph.sent()
        assert sent["to"] == WA_ID and sent["type"] == "text"
        assert "Olá, meu pedido chegou?" in sent["text"]["body"]  # the offline reply quotes it
        assert sent["context"] == {"message_id": "wamid.first"}
        async with _sessions(stack)() as session:
            inbound = await session.scalar(select(Message).where(Message.role == "user"))
            turn = await session.scalar(select(TurnRow))
            outbound = await session.scalar(select(OutboundMessage))
            identity = await session.scalar(select(ChannelIdentity))
        assert inbound is not None and inbound.channel == "whatsapp_cloud"
        assert inbound.provider_message_id == "wamid.first"
        assert turn is not None and turn.delivery_status == "sent"
        assert outbound is not None and outbound.channel == "whatsapp_cloud"
        assert [outbound.provider_message_id] == graph.message_ids  # statuses find it by this
        assert identity is not None
        assert (identity.channel, identity.external_id) == ("whatsapp", f"whatsapp:+{WA_ID}")


async def test_every_message_of_a_conversation_is_answered(tmp_path: Path) -> None:
    async with _gateway(tmp_path) as (stack, graph):
        for number, text in enumerate(("Olá", "Meu pedido é o 4471-XB", "Obrigada")):
            response = await _post(stack, _text(text, wamid=f"wamid.m{number}"))
            assert response.status == 200
            await stack.idle()
        assert [m["context"]["message_id"] for m in graph.sent()] == [
            "wamid.m0",
            "wamid.m1",
            "wamid.m2",
        ]
        async with _sessions(stack)() as session:
            statuses = list(await session.scalars(select(TurnRow.status).order_by(TurnRow.id)))
        assert statuses == ["done"] * 3
        # The conversation's window, asked for by its channel and number, holds its turns.
        body = await post_context(
            stack.client,
            {"Authorization": f"Bearer {API_KEY}"},
            channel="whatsapp_cloud",
            external_id=f"+{WA_ID}",
            message="E o prazo?",
        )
        turns = [m["content"] for m in body["messages"]]  # type: ignore[attr-defined]
        assert "Meu pedido é o 4471-XB" in turns


@pytest.mark.parametrize("tamper", ["missing", "mutated body", "wrong secret"])
async def test_a_bad_signature_is_403_and_stores_nothing(tmp_path: Path, tamper: str) -> None:
    body = _text("oi")
    raw = json.dumps(body).encode()
    signature = {
        "missing": "",
        "mutated body": _signature(raw),
        "wrong secret": _signature(raw, "not-the-app-secret"),
    }[tamper]
    if tamper == "mutated body":
        raw = raw.replace(b'"oi"', b'"oi!"')
    async with _gateway(tmp_path) as (stack, graph):
        response = await _post(stack, raw, signature=signature)
        assert response.status == 403
        assert (await response.json())["error"] == "invalid_signature"
        await stack.idle()
        assert await inbound_rows(stack) == 0
        assert await _count(stack, Customer) == 0
        assert graph.requests == []


async def test_a_malformed_body_is_400_with_the_reason_and_stores_nothing(tmp_path: Path) -> None:
    async with _gateway(tmp_path) as (stack, graph):
        broken = await _post(stack, b'{"object": "whatsapp_business_account", "entry": [')
        assert broken.status == 400 and "not JSON" in (await broken.json())["detail"]
        # One good message and one without an id: the whole body is refused, none stored.
        body = _text("oi")
        value = body["entry"][0]["changes"][0]["value"]
        value["messages"].append({"from": WA_ID, "type": "text", "text": {"body": "x"}})
        half = await _post(stack, body)
        assert half.status == 400 and "id" in (await half.json())["detail"]
        await stack.idle()
        assert await inbound_rows(stack) == 0 and graph.requests == []


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_a_repeated_post_is_stored_and_answered_once(tmp_path: Path, backend: str) -> None:
    wa_id = f"55119{uuid.uuid4().int % 10**8:08d}"
    body = _text("mensagem repetida", wamid=f"wamid.{uuid.uuid4().hex}", wa_id=wa_id)
    async with _gateway(tmp_path, backend) as (stack, graph):
        assert (await _post(stack, body)).status == 200
        await stack.idle()
        assert (await _post(stack, body)).status == 200  # Meta redelivers
        await stack.idle()
        assert await _count(stack, Message, Message.role == "user") == 1
        assert len(graph.sent()) == 1


async def test_a_batch_of_entries_messages_and_statuses_is_taken_in_one_post(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = _text("primeira", wamid="wamid.a1")
    value = first["entry"][0]["changes"][0]["value"]
    value["messages"].append(
        {**value["messages"][0], "id": "wamid.a2", "text": {"body": "segunda"}}
    )
    value["messages"].append(copy.deepcopy(value["messages"][0]))  # wamid.a1 again
    other = _case("current_location", wamid="wamid.b1", wa_id="5511988887777")
    reaction = _case("reaction", wamid="wamid.r1")
    change = other["entry"][0]["changes"]
    change.append(reaction["entry"][0]["changes"][0])
    change.append({"field": "account_update", "value": {"event": "VERIFIED_ACCOUNT"}})
    change.append(
        _statuses({"id": "wamid.unknown", "status": "delivered"})["entry"][0]["changes"][0]
    )
    batch = {"object": "whatsapp_business_account", "entry": first["entry"] + other["entry"]}
    async with _gateway(tmp_path) as (stack, graph):
        with caplog.at_level(logging.INFO, logger="relaydesk.webhooks"):
            assert (await _post(stack, batch)).status == 200
        await stack.idle()
        async with _sessions(stack)() as session:
            stored = [
                (m.provider_message_id, m.text)
                for m in await session.scalars(
                    select(Message).where(Message.role == "user").order_by(Message.id)
                )
            ]
            status = await session.scalar(
                select(OutboundMessage.status).where(
                    OutboundMessage.provider_message_id == "wamid.unknown"
                )
            )
        assert sorted(stored) == [
            ("wamid.a1", "primeira"),
            ("wamid.a2", "segunda"),
            ("wamid.b1", "[location] (12.25089, 43.90539)"),
        ]
        assert status == "delivered"  # kept until our own record of the send joins it
        assert {s["to"] for s in graph.sent()} == {WA_ID, "5511988887777"}
    ignored = [r for r in caplog.records if r.getMessage() == "whatsapp cloud notification ignored"]
    reasons = [getattr(r, "fields", {}).get("reason") for r in ignored]
    assert reasons == ["a reaction is not a question to answer", "only messages are handled"]


@pytest.mark.parametrize("case", ["reaction", "unsupported", "interactive_message_with_err"])
async def test_what_is_not_handled_is_acknowledged_and_not_stored(
    tmp_path: Path, case: str
) -> None:
    async with _gateway(tmp_path) as (stack, graph):
        response = await _post(stack, _case(case))
        assert response.status == 200
        await stack.idle()
        assert await inbound_rows(stack) == 0 and graph.sent() == []


# Statuses


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_statuses_only_move_forward_and_a_failure_keeps_its_code(
    tmp_path: Path, backend: str
) -> None:
    async with _gateway(tmp_path, backend) as (stack, graph):
        await _post(stack, _text("oi"))
        await stack.idle()
        async with _sessions(stack)() as session:
            outbound = await session.scalar(select(OutboundMessage))
        assert outbound is not None
        wamid = outbound.provider_message_id

        async def status_after(*items: dict[str, Any]) -> tuple[str, str | None]:
            response = await _post(stack, _statuses(*items))
            assert response.status == 200
            async with _sessions(stack)() as session:
                row = await session.scalar(
                    select(OutboundMessage).where(OutboundMessage.provider_message_id == wamid)
                )
            assert row is not None
            return row.status, row.error_code

        assert await status_after({"id": wamid, "status": "delivered"}) == ("delivered", None)
        assert await status_after({"id": wamid, "status": "sent"}) == ("delivered", None)
        # One POST, two statuses, out of order: the later one wins either way.
        failed = copy.deepcopy(STATUSES["failed"]["entry"][0]["changes"][0]["value"]["statuses"][0])
        failed.update({"id": wamid})
        failed["errors"][0]["code"] = 131047
        assert await status_after(failed, {"id": wamid, "status": "read"}) == ("failed", "131047")
        assert await status_after({"id": wamid, "status": "read"}) == ("failed", "131047")
        bad = await _post(stack, _statuses({"id": wamid, "status": "read"}), signature="sha256=00")
        assert bad.status == 403


async def test_a_reply_outside_the_window_refused_with_131047_is_held_and_not_retried(
    tmp_path: Path,
) -> None:
    async with _gateway(tmp_path) as (stack, graph):
        graph.fail_next(131047, "Re-engagement message", subcode=2494010)
        await _post(stack, _text("oi"))
        await stack.idle()
        await stack.idle()  # a retry sweep would send it again
        async with _sessions(stack)() as session:
            turn = await session.scalar(select(TurnRow))
        # No template configured: held for an operator (see test_whatsapp_window.py).
        assert turn is not None and turn.delivery_status == "held"
        assert turn.error is not None and "24-hour window" in turn.error
        sends = [r for r in graph.requests if r.json and r.json.get("type") == "text"]
        assert graph.sent() == [] and len(sends) == 1


async def test_the_typing_indicator_goes_on_the_customers_message_while_the_model_works(
    tmp_path: Path,
) -> None:
    model = FakeOpenAI(delay_s=0.8)
    async with (
        model.serving() as model_url,
        _gateway(tmp_path, **model_settings(model_url)) as (
            stack,
            graph,
        ),
    ):
        await _post(stack, _text("Meu pedido?", wamid="wamid.typing1"))
        await stack.idle()
        kinds = [
            "typing" if r.json.get("status") == "read" else "message"
            for r in graph.requests
            if r.json
        ]
    assert kinds[0] == "typing" and kinds[-1] == "message"
    assert graph.typing()[0] == {
        "messaging_product": "whatsapp",
        "status": "read",
        "message_id": "wamid.typing1",
        "typing_indicator": {"type": "text"},
    }


# One customer across providers


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_a_number_through_twilio_and_through_the_cloud_api_is_one_customer(
    tmp_path: Path, backend: str
) -> None:
    twilio = FakeTwilio()
    token, account = "twilio-auth-token-for-tests", "AC" + "c" * 32
    public_url = "https://relay.example.org"
    async with (
        twilio.serving() as twilio_base,
        _gateway(
            tmp_path,
            backend,
            TWILIO_ACCOUNT_SID=account,
            TWILIO_AUTH_TOKEN=token,
            TWILIO_WHATSAPP_FROM="whatsapp:+14155238886",
            TWILIO_API_BASE=twilio_base,
            RELAYDESK_PUBLIC_URL=public_url,
        ) as (stack, graph),
    ):
        params = inbound_params(
            f"SM{uuid.uuid4().hex}", f"whatsapp:+{WA_ID}", "oi", account=account
        )
        twilio_answer = await post_signed(stack.client, params, token=token, public_url=public_url)
        assert twilio_answer.status == 200
        await stack.idle()
        assert (await _post(stack, _text("de novo, pela API da Meta"))).status == 200
        await stack.idle()
        async with _sessions(stack)() as session:
            customers = list(await session.scalars(select(Message.customer_id).distinct()))
            identities = list(await session.scalars(select(ChannelIdentity)))
            channels = sorted(
                await session.scalars(select(Message.channel).where(Message.role == "user"))
            )
        assert await _count(stack, Customer) == 1 and len(customers) == 1
        assert [(i.channel, i.external_id) for i in identities] == [
            ("whatsapp", f"whatsapp:+{WA_ID}")
        ]
        assert channels == ["whatsapp", "whatsapp_cloud"]
        # Each reply went back through the provider its message came from.
        assert [c["To"] for c in twilio.created] == [f"whatsapp:+{WA_ID}"]
        assert [s["to"] for s in graph.sent()] == [WA_ID]


async def test_a_voice_note_is_fetched_from_the_graph_api_and_transcribed(tmp_path: Path) -> None:
    voice = VoiceServices()  # an OpenAI-compatible transcription endpoint
    body = _case("voice", wamid="wamid.voice1")
    media_id = body["entry"][0]["changes"][0]["value"]["messages"][0]["audio"]["id"]
    async with serving_on_loopback(voice.app()) as voice_base:
        async with _gateway(
            tmp_path,
            RELAYDESK_TRANSCRIBER_MODEL="whisper-1",
            RELAYDESK_TRANSCRIBER_BASE_URL=f"{voice_base}/v1",
            RELAYDESK_FETCH_ALLOW="127.0.0.1",  # the local Graph's media host
        ) as (stack, graph):
            graph.media[media_id] = (AUDIO, "audio/ogg; codecs=opus")
            assert (await _post(stack, body)).status == 200
            await stack.idle()
            async with _sessions(stack)() as session:
                rows = list(await session.scalars(select(Message).order_by(Message.id)))
            fetched = [r.path for r in graph.requests if r.method == "GET"]
    placeholder, transcript, reply = rows
    assert placeholder.text == "[voice note, not transcribed]"
    assert transcript.supersedes_id == placeholder.id
    assert transcript.text == "Quero saber do pedido 4471?"  # the doubtful number is marked
    assert fetched == [f"/v21.0/{media_id}", f"/download/{media_id}"]
    assert len(voice.transcriptions) == 1
    assert "Quero saber do pedido 4471?" in graph.sent()[0]["text"]["body"]

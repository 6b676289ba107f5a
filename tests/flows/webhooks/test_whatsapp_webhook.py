"""WhatsApp through a real gateway: signed webhooks in, the real twilio client out to a local
server speaking Twilio's API; bad input stores nothing; status callbacks only move forward."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from urllib.parse import urlencode

import pytest
from aiohttp.test_utils import TestServer
from sqlalchemy import delete, func, select
from twilio.request_validator import RequestValidator

from gateway.storage.models import ChannelIdentity, Message, OutboundMessage, TurnRow
from tests.support.app_settings import AUTH
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.signed_twilio import inbound_params
from tests.support.stack import Stack, inbound_rows, running_stack
from tests.support.twilio_server import FakeTwilio

TOKEN = "twilio-auth-token-for-tests"
SID = "AC" + "a" * 32
BOT = "whatsapp:+14155238886"


@pytest.fixture
async def twilio():  # type: ignore[no-untyped-def]
    fake = FakeTwilio()
    server = TestServer(fake.app())
    await server.start_server()
    yield fake, str(server.make_url("")).rstrip("/")
    await server.close()


def _settings(api_base: str, **more: object) -> dict[str, object]:
    return {
        "TWILIO_ACCOUNT_SID": SID,
        "TWILIO_AUTH_TOKEN": TOKEN,
        "TWILIO_WHATSAPP_FROM": BOT,
        "TWILIO_API_BASE": api_base,
        "RELAYDESK_PUBLIC_URL": "https://relay.example.org",
        **more,
    }


def _params(
    text: str, sender: str = "whatsapp:+5511998765432", sid: str | None = None
) -> dict[str, str]:
    return inbound_params(sid or "SM" + uuid.uuid4().hex, sender, text, account=SID)


async def _webhook(
    stack: Stack,
    params: dict[str, str],
    *,
    path: str = "/webhooks/twilio/whatsapp",
    signature: str | None = None,
):  # type: ignore[no-untyped-def]
    url = f"https://relay.example.org{path}"
    signed = RequestValidator(TOKEN).compute_signature(url, params)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if signature != "":
        headers["X-Twilio-Signature"] = signature or signed
    return await stack.client.post(path, data=urlencode(params).encode(), headers=headers)


async def _rows(stack: Stack, model=Message) -> int:  # type: ignore[no-untyped-def]
    async with stack.sessions()() as session:
        return int(await session.scalar(select(func.count()).select_from(model)))


async def test_signed_message_is_stored_and_answered_through_twilio(tmp_path: Path, twilio) -> None:  # type: ignore[no-untyped-def]
    fake, base = twilio
    async with running_stack("embedded", tmp_path, **_settings(base)) as stack:
        response = await _webhook(stack, _params("Olá, meu pedido chegou?"))
        assert response.status == 200
        assert "<Response>" in await response.text()
        await stack.idle()
        [sent] = fake.created
        assert sent["To"] == "whatsapp:+5511998765432" and sent["From"] == BOT
        assert "Olá, meu pedido chegou?" in sent["Body"]  # the offline reply quotes it
        async with stack.sessions()() as session:
            outbound = await session.scalar(select(OutboundMessage))
            turn = await session.scalar(select(TurnRow))
        assert outbound is not None and outbound.status == "queued"
        assert turn is not None and turn.delivery_status == "sent"
        # The callback URL names the reply and its part, for a callback that beats our record.
        assert sent["StatusCallback"] == (
            f"https://relay.example.org/webhooks/twilio/status?reply={turn.id}.{turn.reply_message_id}.0"
        )


async def test_long_reply_is_split_in_order(tmp_path: Path, twilio) -> None:  # type: ignore[no-untyped-def]
    fake, base = twilio
    words = " ".join(f"w{i:04d}" for i in range(700))  # ~4200 characters
    model = FakeOpenAI(reply=words)
    async with (
        model.serving() as model_url,
        running_stack(
            "embedded", tmp_path, **model_settings(model_url), **_settings(base)
        ) as stack,
    ):
        assert (await _webhook(stack, _params("manda a lista toda"))).status == 200
        await stack.idle()
        assert len(fake.created) >= 3
        assert all(len(part["Body"]) <= 1600 for part in fake.created)
        joined = " ".join(part["Body"] for part in fake.created)
        positions = [joined.index(f"w{i:04d}") for i in (0, 350, 699)]
        assert positions == sorted(positions)


@pytest.mark.parametrize("signature", ["", "bm90LXRoZS1yaWdodC1zaWduYXR1cmU="])
async def test_bad_or_missing_signature_is_403_and_stores_nothing(
    tmp_path: Path, twilio, signature: str
) -> None:  # type: ignore[no-untyped-def]
    fake, base = twilio
    async with running_stack("embedded", tmp_path, **_settings(base)) as stack:
        response = await _webhook(stack, _params("oi"), signature=signature)
        assert response.status == 403
        assert (await response.json())["error"] == "invalid_signature"
        assert await inbound_rows(stack) == 0
        assert fake.created == []


async def test_malformed_is_400_and_oversized_is_413(tmp_path: Path, twilio) -> None:  # type: ignore[no-untyped-def]
    _, base = twilio
    async with running_stack(
        "embedded", tmp_path, RELAYDESK_MAX_BODY_BYTES=4096, **_settings(base)
    ) as stack:
        no_sid = _params("oi")
        del no_sid["MessageSid"]
        response = await _webhook(stack, no_sid)
        assert response.status == 400 and "MessageSid" in (await response.json())["detail"]
        huge = await _webhook(stack, _params("x" * 10_000))
        assert huge.status == 413
        assert await inbound_rows(stack) == 0


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_20_concurrent_replays_store_one_row_and_send_one_reply(
    backend: str, tmp_path: Path, twilio
) -> None:  # type: ignore[no-untyped-def]
    fake, base = twilio
    params = _params("mensagem repetida", sender=f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}")
    async with running_stack(backend, tmp_path, **_settings(base)) as stack:
        responses = await asyncio.gather(*(_webhook(stack, params) for _ in range(20)))
        assert {r.status for r in responses} == {200}
        await stack.idle()
        assert await _rows(stack) == 2  # the message and its one reply
        assert len(fake.created) == 1


async def test_twilio_429_is_retried(tmp_path: Path, twilio) -> None:  # type: ignore[no-untyped-def]
    fake, base = twilio
    fake.fail_next = [429, 503]
    async with running_stack("embedded", tmp_path, **_settings(base)) as stack:
        await _webhook(stack, _params("oi"))
        await stack.idle()
        assert fake.attempts == 3 and len(fake.created) == 1


async def test_failed_send_is_recorded_and_retried_later(tmp_path: Path, twilio) -> None:  # type: ignore[no-untyped-def]
    fake, base = twilio
    fake.fail_next = [500] * 4  # every attempt of the first delivery fails
    async with running_stack("embedded", tmp_path, **_settings(base)) as stack:
        await _webhook(stack, _params("oi"))
        await stack.idle()
        async with stack.sessions()() as session:
            turn = await session.scalar(select(TurnRow))
        assert turn is not None and turn.delivery_status == "retry" and turn.error
        assert fake.created == []
        await stack.idle()  # the sweep sends it again
        assert len(fake.created) == 1
        async with stack.sessions()() as session:
            turn = await session.scalar(select(TurnRow))
        assert turn is not None and turn.delivery_status == "sent"
        assert turn.delivery_attempts == 2


async def test_status_callbacks_only_move_forward(tmp_path: Path, twilio) -> None:  # type: ignore[no-untyped-def]
    _, base = twilio
    async with running_stack("embedded", tmp_path, **_settings(base)) as stack:
        await _webhook(stack, _params("oi"))
        await stack.idle()
        async with stack.sessions()() as session:
            outbound = await session.scalar(select(OutboundMessage))
        assert outbound is not None
        sid = outbound.provider_message_id

        async def callback(status: str) -> str:
            params = {
                "MessageSid": sid,
                "MessageStatus": status,
                "AccountSid": SID,
                "ChannelPrefix": "whatsapp",
            }
            response = await _webhook(stack, params, path="/webhooks/twilio/status")
            assert response.status == 204
            async with stack.sessions()() as session:
                row = await session.scalar(
                    select(OutboundMessage).where(OutboundMessage.provider_message_id == sid)
                )
            assert row is not None
            return row.status

        assert await callback("delivered") == "delivered"
        assert await callback("sent") == "delivered"  # out of order: ignored
        assert await callback("delivered") == "delivered"  # duplicate
        assert await callback("read") == "read"
        assert await callback("failed") == "read"  # nothing after read
        bad = await _webhook(
            stack,
            {"MessageSid": sid, "MessageStatus": "sent"},
            path="/webhooks/twilio/status",
            signature="d3Jvbmc=",
        )
        assert bad.status == 403


async def test_a_reply_stored_but_never_sent_is_sent_by_the_sweep(tmp_path: Path, twilio) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from sqlalchemy import update

    from gateway.runtime.clock import utcnow

    fake, base = twilio
    async with running_stack("embedded", tmp_path, **_settings(base)) as stack:
        await _webhook(stack, _params("oi"))
        await stack.idle()
        assert len(fake.created) == 1
        # As if the process had stopped after storing the reply and before sending it.
        async with stack.sessions().begin() as session:
            await session.execute(delete(OutboundMessage))
            await session.execute(
                update(TurnRow).values(
                    delivery_status=None, updated_at=utcnow() - timedelta(minutes=5)
                )
            )
        await stack.idle()
        assert len(fake.created) == 2
        async with stack.sessions()() as session:
            turn = await session.scalar(select(TurnRow))
        assert turn is not None and turn.delivery_status == "sent"


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_concurrent_sweeps_send_a_stranded_reply_once(
    backend: str, tmp_path: Path, twilio
) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from sqlalchemy import update

    from gateway.runtime.clock import utcnow

    fake, base = twilio
    sender = f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"
    async with running_stack(backend, tmp_path, **_settings(base)) as stack:
        await _webhook(stack, _params("oi", sender=sender))
        await stack.idle()
        assert len(fake.created) == 1
        async with stack.sessions().begin() as session:  # stranded: stored, never sent
            await session.execute(delete(OutboundMessage))
            await session.execute(
                update(TurnRow).values(
                    delivery_status=None, updated_at=utcnow() - timedelta(minutes=5)
                )
            )
        sent = await asyncio.gather(*(stack.deliver.retry_deliveries() for _ in range(5)))
        assert sum(sent) >= 1
        assert len(fake.created) == 2  # one more send, not five
        async with stack.sessions()() as session:
            turn = await session.scalar(select(TurnRow))
        assert turn is not None and turn.delivery_status == "sent"
        assert turn.delivery_lease_until is None


async def test_pix_keys_in_messages_are_not_the_customers_identifiers(
    tmp_path: Path, twilio: tuple[FakeTwilio, str]
) -> None:
    _, base = twilio
    sender = "whatsapp:+5511998765432"
    texts = [
        "Meu pedido é o 4471-XB e minha chave Pix é ana.souza@example.com",
        "Corrigindo: minha chave Pix na verdade é ana.pix@example.com, a outra não vale mais.",
        "Ah, e meu e-mail é ana@example.com",
    ]
    async with running_stack("embedded", tmp_path, **_settings(base)) as stack:
        for text in texts:
            assert (await _webhook(stack, _params(text, sender))).status == 200
            await stack.stored()  # in order, as the provider would send them
        async with stack.sessions()() as session:
            customer_id = await session.scalar(
                select(ChannelIdentity.customer_id).where(ChannelIdentity.external_id == sender)
            )
        profile = await stack.client.get(f"/v1/operator/customers/{customer_id}", headers=AUTH)
        assert profile.status == 200
        identifiers = {(i["kind"], i["value"]) for i in (await profile.json())["identifiers"]}
    # The sender's number (verified) and the e-mail they said is theirs; no Pix key.
    assert identifiers == {("phone", "+5511998765432"), ("email", "ana@example.com")}

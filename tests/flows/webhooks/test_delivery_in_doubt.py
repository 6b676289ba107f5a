"""A reply whose send nobody knows the outcome of — its process died after Twilio accepted it,
before the send was recorded — is sent once and in order: Twilio's status callback (its URL
names the reply) records it, so it is not sent again, and the conversation's later replies
wait behind it instead of overtaking it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from sqlalchemy import delete, select, update
from twilio.request_validator import RequestValidator

from devtools.local_twilio import LocalTwilio
from gateway.keys import SCHEDULER
from gateway.runtime.clock import utcnow
from gateway.storage.models import OutboundMessage, TurnRow
from tests.support.signed_twilio import inbound_params
from tests.support.stack import Stack, running_stack

TOKEN = "twilio-auth-token-for-tests"
ACCOUNT = "AC" + "b" * 32
PUBLIC = "https://relay.example.org"


@pytest.fixture
async def twilio() -> AsyncIterator[tuple[LocalTwilio, str]]:
    fake = LocalTwilio()
    async with fake.serving() as base:
        yield fake, base


def _settings(api_base: str) -> dict[str, object]:
    return {
        "TWILIO_ACCOUNT_SID": ACCOUNT,
        "TWILIO_AUTH_TOKEN": TOKEN,
        "TWILIO_WHATSAPP_FROM": "whatsapp:+14155238886",
        "TWILIO_API_BASE": api_base,
        "RELAYDESK_PUBLIC_URL": PUBLIC,
    }


async def _post_signed(stack: Stack, url: str, params: dict[str, str]) -> int:
    """POST `params` to `url` (one of ours) as Twilio would: signed over the whole URL."""
    called = urlsplit(url)
    path = called.path + (f"?{called.query}" if called.query else "")
    response = await stack.client.post(
        path,
        data=urlencode(params).encode(),
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Twilio-Signature": RequestValidator(TOKEN).compute_signature(url, params),
        },
    )
    return response.status


async def _customer_writes(stack: Stack, sender: str, text: str) -> None:
    params = inbound_params("SM" + uuid.uuid4().hex, sender, text, account=ACCOUNT)
    assert await _post_signed(stack, f"{PUBLIC}/webhooks/twilio/whatsapp", params) == 200
    # Stored and answered as it arrives, without the sweep (which settles deliveries).
    await stack.stored()
    await stack.app[SCHEDULER].idle()


async def _lose_the_record_of_the_send(stack: Stack, *, lease_left: timedelta) -> None:
    """As if the process had died right after Twilio accepted the reply: the turn still
    "sending" under its lease, no outbound row."""
    async with stack.sessions().begin() as session:
        await session.execute(delete(OutboundMessage))
        await session.execute(
            update(TurnRow).values(
                delivery_status="sending", delivery_lease_until=utcnow() + lease_left
            )
        )


async def _let_leases_run_out(stack: Stack) -> None:
    async with stack.sessions().begin() as session:
        await session.execute(
            update(TurnRow)
            .where(TurnRow.delivery_status == "sending")
            .values(delivery_lease_until=utcnow() - timedelta(seconds=1))
        )


async def _turns(stack: Stack) -> list[TurnRow]:
    async with stack.sessions()() as session:
        return list(await session.scalars(select(TurnRow).order_by(TurnRow.id)))


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_a_send_twilio_reported_is_recorded_and_not_sent_again(
    backend: str, tmp_path: Path, twilio: tuple[LocalTwilio, str]
) -> None:
    fake, base = twilio
    sender = f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"
    async with running_stack(backend, tmp_path, **_settings(base)) as stack:
        await _customer_writes(stack, sender, "oi, meu pedido 4471 chegou?")
        [sent] = fake.created
        await _lose_the_record_of_the_send(stack, lease_left=timedelta(seconds=-1))

        # Twilio's callback reaches the URL the send gave it.
        callback = {"MessageSid": "SM" + uuid.uuid4().hex, "MessageStatus": "sent"}
        callback |= {"AccountSid": ACCOUNT, "To": sender}
        assert await _post_signed(stack, sent["StatusCallback"], callback) == 204

        assert await stack.deliver.retry_deliveries() == 1
        assert len(fake.created) == 1  # found sent: not sent a second time
        [turn] = await _turns(stack)
        assert turn.delivery_status == "sent" and turn.delivery_lease_until is None
        async with stack.sessions()() as session:
            [row] = await session.scalars(select(OutboundMessage))
        assert (row.provider_message_id, row.turn_id) == (callback["MessageSid"], turn.id)
        assert row.reply_message_id == turn.reply_message_id and row.part == 0


async def test_a_send_nobody_reported_goes_again_once_its_lease_ran_out(
    tmp_path: Path, twilio: tuple[LocalTwilio, str]
) -> None:
    fake, base = twilio
    sender = f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"
    async with running_stack("embedded", tmp_path, **_settings(base)) as stack:
        await _customer_writes(stack, sender, "oi")
        await _lose_the_record_of_the_send(stack, lease_left=timedelta(seconds=30))
        assert await stack.deliver.retry_deliveries() == 0  # in doubt: its lease still runs
        assert len(fake.created) == 1
        await _let_leases_run_out(stack)
        assert await stack.deliver.retry_deliveries() == 1
        assert len(fake.created) == 2
        assert [t.delivery_status for t in await _turns(stack)] == ["sent"]


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_later_replies_wait_behind_a_reply_in_doubt(
    backend: str, tmp_path: Path, twilio: tuple[LocalTwilio, str]
) -> None:
    fake, base = twilio
    sender = f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"
    async with running_stack(backend, tmp_path, **_settings(base)) as stack:
        await _customer_writes(stack, sender, "primeira pergunta")
        await _lose_the_record_of_the_send(stack, lease_left=timedelta(seconds=30))
        fake.created.clear()  # Twilio never got it after all

        await _customer_writes(stack, sender, "segunda pergunta")
        assert fake.created == []  # the second reply did not overtake the first
        first, second = await _turns(stack)
        assert second.reply_message_id is not None and second.delivery_status == "retry"

        await _let_leases_run_out(stack)
        assert await stack.deliver.retry_deliveries() == 2
        callbacks = [created["StatusCallback"] for created in fake.created]
        assert callbacks == [
            f"{PUBLIC}/webhooks/twilio/status?reply={turn.id}.{turn.reply_message_id}.0"
            for turn in (first, second)
        ]
        assert [t.delivery_status for t in await _turns(stack)] == ["sent", "sent"]

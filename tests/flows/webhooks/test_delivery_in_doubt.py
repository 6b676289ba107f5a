"""A reply whose send nobody knows the outcome of — its process died after Twilio accepted it,
before the send was recorded — is sent once and in order: Twilio's status callback (its URL
names the reply) records it, so it is not sent again, and the conversation's later replies
wait behind it instead of overtaking it."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import delete, select, update

from gateway.keys import SCHEDULER
from gateway.runtime.clock import utcnow
from gateway.storage.models import OutboundMessage, TurnRow
from tests.support.signed_twilio import post_signed
from tests.support.stack import Stack
from tests.support.whatsapp_stack import ACCOUNT, TOKEN, WhatsAppStack, whatsapp_stack

BACKENDS = pytest.mark.parametrize("backend", ["embedded", "production"])


def _number() -> str:
    return f"+55119{uuid.uuid4().int % 10**8:08d}"


async def _customer_writes(gateway: WhatsAppStack, number: str, text: str) -> None:
    await gateway.post(number, text)
    # Stored and answered as it arrives, without the sweep (which settles deliveries).
    await gateway.stack.stored()
    await gateway.stack.app[SCHEDULER].idle()


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


@BACKENDS
async def test_a_send_twilio_reported_is_recorded_and_not_sent_again(
    backend: str, tmp_path: Path
) -> None:
    async with whatsapp_stack(tmp_path, backend) as gateway:
        stack, fake, number = gateway.stack, gateway.twilio, _number()
        await _customer_writes(gateway, number, "oi, meu pedido 4471 chegou?")
        [sent] = fake.created
        await _lose_the_record_of_the_send(stack, lease_left=timedelta(seconds=-1))

        # Twilio's callback reaches the URL the send gave it, signed over all of it.
        callback = {"MessageSid": "SM" + uuid.uuid4().hex, "MessageStatus": "sent"}
        callback |= {"AccountSid": ACCOUNT, "To": f"whatsapp:{number}"}
        path = sent["StatusCallback"].removeprefix(gateway.public_url)
        assert path.startswith("/webhooks/twilio/status?reply=")
        answer = await post_signed(
            stack.client, callback, token=TOKEN, public_url=gateway.public_url, path=path
        )
        assert answer.status == 204

        assert await stack.deliver.retry_deliveries() == 1
        assert len(fake.created) == 1  # found sent: not sent a second time
        [turn] = await _turns(stack)
        assert turn.delivery_status == "sent" and turn.delivery_lease_until is None
        async with stack.sessions()() as session:
            [row] = await session.scalars(select(OutboundMessage))
        assert (row.provider_message_id, row.turn_id) == (callback["MessageSid"], turn.id)
        assert row.reply_message_id == turn.reply_message_id and row.part == 0


async def test_a_send_nobody_reported_goes_again_once_its_lease_ran_out(tmp_path: Path) -> None:
    async with whatsapp_stack(tmp_path) as gateway:
        stack, fake = gateway.stack, gateway.twilio
        await _customer_writes(gateway, _number(), "oi")
        await _lose_the_record_of_the_send(stack, lease_left=timedelta(seconds=30))
        assert await stack.deliver.retry_deliveries() == 0  # in doubt: its lease still runs
        assert len(fake.created) == 1
        await _let_leases_run_out(stack)
        assert await stack.deliver.retry_deliveries() == 1
        assert len(fake.created) == 2
        assert [t.delivery_status for t in await _turns(stack)] == ["sent"]


@BACKENDS
async def test_later_replies_wait_behind_a_reply_in_doubt(backend: str, tmp_path: Path) -> None:
    async with whatsapp_stack(tmp_path, backend) as gateway:
        stack, fake, number = gateway.stack, gateway.twilio, _number()
        await _customer_writes(gateway, number, "primeira pergunta")
        await _lose_the_record_of_the_send(stack, lease_left=timedelta(seconds=30))
        fake.created.clear()  # Twilio never got it after all

        await _customer_writes(gateway, number, "segunda pergunta")
        assert fake.created == []  # the second reply did not overtake the first
        first, second = await _turns(stack)
        assert second.reply_message_id is not None and second.delivery_status == "retry"

        await _let_leases_run_out(stack)
        assert await stack.deliver.retry_deliveries() == 2
        callbacks = [created["StatusCallback"] for created in fake.created]
        assert callbacks == [
            f"{gateway.public_url}/webhooks/twilio/status?reply={turn.id}.{turn.reply_message_id}.0"
            for turn in (first, second)
        ]
        assert [t.delivery_status for t in await _turns(stack)] == ["sent", "sent"]

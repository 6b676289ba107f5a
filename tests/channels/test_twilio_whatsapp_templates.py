"""Twilio WhatsApp templates through the twilio SDK to the local Twilio API: a message with a
template goes as ContentSid + ContentVariables (the Content API), not as Body; Twilio's error
code reaches the caller on `SendFailed.code`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from channels.base import OutboundMessage, SendFailed, Template
from channels.twilio_whatsapp import TwilioWhatsAppChannel
from tests.support.twilio_server import FakeTwilio

CUSTOMER = "whatsapp:+5511998765432"
CONTENT_SID = "HX" + "d" * 32


@pytest.fixture
async def twilio() -> AsyncIterator[tuple[FakeTwilio, str]]:
    fake = FakeTwilio()
    async with fake.serving() as base:
        yield fake, base


@pytest.fixture
async def channel(twilio: tuple[FakeTwilio, str]) -> AsyncIterator[TwilioWhatsAppChannel]:
    adapter = TwilioWhatsAppChannel(
        account_sid="AC" + "1" * 32,
        auth_token="12345",
        sender="whatsapp:+14155238886",
        public_url="https://relay.example.org",
        api_base=twilio[1],
        clock=lambda: datetime(2026, 11, 29, tzinfo=UTC),
        base_delay_s=0.01,
    )
    yield adapter
    await adapter.close()


def _reply(template: Template | None) -> OutboundMessage:
    return OutboundMessage(
        "whatsapp", CUSTOMER, "Olá Ana, seu pedido saiu." * 80, None, "7", (), template
    )


async def test_a_template_goes_as_content_sid_and_variables(
    twilio: tuple[FakeTwilio, str], channel: TwilioWhatsAppChannel
) -> None:
    fake, _ = twilio
    template = Template("reengage", CONTENT_SID, "pt_BR", {"1": "Ana", "2": "Loja Azul"})
    result = await channel.send(_reply(template))
    [form] = fake.created  # one message, however long the stored text
    assert len(result.provider_message_ids) == 1
    assert form["ContentSid"] == CONTENT_SID
    assert json.loads(form["ContentVariables"]) == {"1": "Ana", "2": "Loja Azul"}
    assert "Body" not in form
    assert form["To"] == CUSTOMER and form["From"] == "whatsapp:+14155238886"
    assert form["StatusCallback"] == "https://relay.example.org/webhooks/twilio/status"


async def test_a_template_without_a_content_sid_is_refused_before_twilio(
    twilio: tuple[FakeTwilio, str], channel: TwilioWhatsAppChannel
) -> None:
    fake, _ = twilio
    with pytest.raises(SendFailed) as failed:
        await channel.send(_reply(Template("reengage", None, "pt_BR", {})))
    assert not failed.value.retryable and "content_sid" in str(failed.value)
    assert fake.attempts == 0


async def test_twilio_s_error_code_reaches_the_caller(
    twilio: tuple[FakeTwilio, str], channel: TwilioWhatsAppChannel
) -> None:
    fake, _ = twilio
    fake.fail_next = [(400, 63016)]
    with pytest.raises(SendFailed) as failed:
        await channel.send(OutboundMessage("whatsapp", CUSTOMER, "Oi de novo"))
    assert failed.value.code == "63016" and not failed.value.retryable
    assert fake.attempts == 1  # a 4xx is not tried again
    fake.fail_next = [503] * 4
    with pytest.raises(SendFailed) as unavailable:
        await channel.send(OutboundMessage("whatsapp", CUSTOMER, "Oi de novo"))
    assert unavailable.value.retryable

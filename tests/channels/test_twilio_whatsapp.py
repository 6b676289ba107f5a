"""The Twilio WhatsApp adapter on real payloads (signature vectors and recorded webhooks), and
its sends and typing indicators through the twilio SDK to the local Twilio API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import pytest
from twilio.request_validator import RequestValidator

from channels.base import (
    Media,
    OutboundMessage,
    PayloadInvalid,
    RawRequest,
    SendFailed,
    SendReference,
    SignatureInvalid,
    TypingSignals,
)
from channels.twilio_whatsapp import AUDIO_PLACEHOLDER, MAX_BODY_CHARS, TwilioWhatsAppChannel
from tests.support.fixtures import FIXTURES as SHARED_FIXTURES
from tests.support.twilio_server import FakeTwilio

FIXTURES = SHARED_FIXTURES / "twilio_whatsapp"
VECTORS = json.loads((FIXTURES / "signature_test_vectors.json").read_text())
NOW = datetime(2026, 11, 29, tzinfo=UTC)


def channel(token: str = "12345", public_url: str | None = None) -> TwilioWhatsAppChannel:
    return TwilioWhatsAppChannel(
        account_sid="AC" + "1" * 32,
        auth_token=token,
        sender="whatsapp:+14155238886",
        public_url=public_url,
        clock=lambda: NOW,
    )


def fixture_request(
    name: str, url: str = "https://relay.example.org/webhooks/twilio/whatsapp"
) -> RawRequest:
    body = (FIXTURES / name).read_bytes()
    return RawRequest("POST", url, {"Content-Type": "application/x-www-form-urlencoded"}, body)


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"] for c in VECTORS["cases"]])
def test_every_signature_vector_behaves_as_expected(case: dict) -> None:  # type: ignore[type-arg]
    if "raw_body" in case:
        body = case["raw_body"].encode()
        headers = {"Content-Type": "application/json"}
    else:
        body = urlencode([tuple(pair) for pair in case["params"]]).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
    signed = RawRequest(
        "POST", case["url"], {**headers, "X-Twilio-Signature": case["expected_signature"]}, body
    )
    if case["valid"]:
        channel(VECTORS["auth_token"]).verify(signed)
    else:
        with pytest.raises(SignatureInvalid):
            channel(VECTORS["auth_token"]).verify(signed)
    tampered = RawRequest(
        "POST",
        case["url"],
        {**headers, "X-Twilio-Signature": case["expected_signature"]},
        body + (b"&x=1" if "raw_body" not in case else b" "),
    )
    with pytest.raises(SignatureInvalid):
        channel(VECTORS["auth_token"]).verify(tampered)


def _signed(name: str, public: str, internal: str, token: str = "secret-token") -> RawRequest:
    body = (FIXTURES / name).read_bytes()
    params = dict(pair.split("=", 1) for pair in body.decode().split("&"))
    from urllib.parse import unquote_plus

    params = {unquote_plus(k): unquote_plus(v) for k, v in params.items()}
    signature = RequestValidator(token).compute_signature(public, params)
    return RawRequest(
        "POST",
        internal,
        {"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": signature},
        body,
    )


def test_signature_is_checked_against_the_public_url_behind_a_proxy() -> None:
    public = "https://relay.example.org/webhooks/twilio/whatsapp"
    request = _signed(
        "inbound_text.form.txt", public, "http://10.0.0.7:8080/webhooks/twilio/whatsapp"
    )
    channel("secret-token", public_url="https://relay.example.org").verify(request)
    with pytest.raises(SignatureInvalid):
        channel("secret-token").verify(request)  # without the public URL the host differs
    with pytest.raises(SignatureInvalid):
        channel("other-token", public_url="https://relay.example.org").verify(request)


def test_missing_signature_or_token_is_refused() -> None:
    request = fixture_request("inbound_text.form.txt")
    with pytest.raises(SignatureInvalid):
        channel().verify(request)
    with pytest.raises(SignatureInvalid):
        TwilioWhatsAppChannel(
            account_sid=None, auth_token=None, sender=None, public_url=None, clock=lambda: NOW
        ).verify(request)


def test_inbound_text() -> None:
    [message] = channel().parse(fixture_request("inbound_text.form.txt")).messages
    assert (message.channel, message.kind, message.text) == ("whatsapp", "text", "test")
    assert message.provider_message_id == "SM892512e202b34d4109b10a3893fa9640"
    assert message.sender == "whatsapp:+31612345678"
    assert message.extra["ApiVersion"] == "2010-04-01"  # every parameter kept


def test_inbound_image() -> None:
    [message] = channel().parse(fixture_request("inbound_image.form.txt")).messages
    assert message.kind == "image"  # no MessageType in this older capture: from its type
    assert len(message.media) == 1
    assert message.media[0].content_type == "image/jpeg"
    assert message.media[0].url.startswith("https://api.twilio.com/")
    assert message.media[0].caption is None
    assert message.text == "[image]"
    assert message.reply_to_provider_id is None


def test_inbound_location() -> None:
    [message] = channel().parse(fixture_request("inbound_location.form.txt")).messages
    assert message.kind == "location"
    assert message.text.startswith("[location]")
    assert message.extra["Latitude"] in message.text


def test_voice_note_built_from_the_image_sample() -> None:
    body = (FIXTURES / "inbound_image.form.txt").read_text().replace("image%2Fjpeg", "audio%2Fogg")
    request = RawRequest("POST", "https://x/y", {}, body.encode())
    [message] = channel().parse(request).messages
    assert message.kind == "voice"
    assert message.text == AUDIO_PLACEHOLDER
    assert message.media[0].content_type == "audio/ogg"


def test_current_parameters_and_unknown_ones_are_kept() -> None:
    body = urlencode(
        {
            "MessageSid": "SMx",
            "From": "whatsapp:+5511998765432",
            "Body": "",
            "NumMedia": "0",
            "ProfileName": "Ana",
            "WaId": "5511998765432",
            "MessageType": "button",
            "ButtonText": "Falar com atendente",
            "ButtonPayload": "human",
            "BrandNewParam": "42",
        }
    ).encode()
    [message] = channel().parse(RawRequest("POST", "https://x/y", {}, body)).messages
    assert (message.kind, message.text, message.sender_name) == (
        "button",
        "Falar com atendente",
        "Ana",
    )
    assert message.extra["BrandNewParam"] == "42"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"From=whatsapp%3A%2B5511",
        b"MessageSid=SM1",
        b"\xff\xfe",
        b"MessageSid=SM1&From=x&NumMedia=many",
    ],
)
def test_malformed_bodies_have_a_reason(body: bytes) -> None:
    with pytest.raises(PayloadInvalid) as raised:
        channel().parse(RawRequest("POST", "https://x/y", {}, body))
    assert str(raised.value)


def test_status_callbacks_parse() -> None:
    delivered = channel().parse_status(fixture_request("status_delivered.form.txt"))
    assert delivered.status == "delivered" and delivered.provider_message_id.startswith("SM")
    assert delivered.error_code is None and delivered.reference is None
    assert channel().parse_status(fixture_request("status_sent.form.txt")).status == "sent"


def test_a_status_callback_names_the_reply_its_url_carried() -> None:
    url = "https://relay.example.org/webhooks/twilio/status?reply=41.97.2"
    status = channel().parse_status(fixture_request("status_sent.form.txt", url))
    assert status.reference == SendReference(turn_id=41, reply_id=97) and status.part == 2


@pytest.mark.parametrize("query", ["reply=41.97", "reply=a.b.c", "reply=1.2.3&reply=4.5.6", ""])
def test_a_status_callback_without_a_readable_reference_is_still_a_status(query: str) -> None:
    url = f"https://relay.example.org/webhooks/twilio/status?{query}"
    status = channel().parse_status(fixture_request("status_sent.form.txt", url))
    assert status.status == "sent" and status.reference is None and status.part == 0


# Sends and typing indicators through the twilio SDK to the local Twilio API.

INBOUND_SID = "SM892512e202b34d4109b10a3893fa9640"
CUSTOMER = "whatsapp:+5511998765432"


@pytest.fixture
async def twilio() -> AsyncIterator[tuple[FakeTwilio, str]]:
    fake = FakeTwilio()
    async with fake.serving() as base:
        yield fake, base


def sender(base: str, **options: Any) -> TwilioWhatsAppChannel:
    return TwilioWhatsAppChannel(
        account_sid="AC" + "1" * 32,
        auth_token="12345",
        sender="whatsapp:+14155238886",
        public_url=None,
        api_base=base,
        clock=lambda: NOW,
        base_delay_s=0.01,
        **options,
    )


async def test_a_5000_character_reply_arrives_in_ordered_parts(
    twilio: tuple[FakeTwilio, str],
) -> None:
    fake, base = twilio
    text = " ".join(f"Frase número {i:03d} da resposta longa." for i in range(150))
    assert len(text) >= 5000
    channel = sender(base)
    try:
        result = await channel.send(OutboundMessage("whatsapp", CUSTOMER, text, INBOUND_SID))
    finally:
        await channel.close()
    bodies = [form["Body"] for form in fake.created]
    assert len(bodies) == 4 == len(result.provider_message_ids)
    assert all(len(body) <= MAX_BODY_CHARS for body in bodies)
    # Cut after a sentence's period, which stays with its sentence.
    assert all(body.startswith("Frase") and body.endswith("longa.") for body in bodies)
    assert " ".join(bodies) == text
    assert {form["To"] for form in fake.created} == {CUSTOMER}


async def test_typing_reaches_the_typing_indicator_resource(
    twilio: tuple[FakeTwilio, str],
) -> None:
    fake, base = twilio
    channel = sender(base)
    assert isinstance(channel, TypingSignals) and channel.typing_repeat_s == 20.0
    try:
        await channel.typing(CUSTOMER, INBOUND_SID)
        await channel.typing(CUSTOMER, "MM" + "0a" * 16)
    finally:
        await channel.close()
    assert fake.typing == [
        {"channel": "whatsapp", "messageId": INBOUND_SID},
        {"channel": "whatsapp", "messageId": "MM" + "0a" * 16},
    ]
    assert fake.created == []


@pytest.mark.parametrize("reply_to", [None, "", "SMx", "IM" + "1" * 32, "visitor:c1"])
async def test_typing_without_a_message_sid_sends_nothing(
    twilio: tuple[FakeTwilio, str], reply_to: str | None
) -> None:
    fake, base = twilio
    channel = sender(base)
    try:
        await channel.typing(CUSTOMER, reply_to)
    finally:
        await channel.close()
    assert fake.typing == []


@pytest.mark.parametrize(("status", "retryable"), [(400, False), (429, True), (503, True)])
async def test_a_refused_typing_indicator_is_one_attempt(
    twilio: tuple[FakeTwilio, str], status: int, retryable: bool
) -> None:
    fake, base = twilio
    fake.fail_typing_next = [status, status]
    channel = sender(base)
    try:
        with pytest.raises(SendFailed) as failed:
            await channel.typing(CUSTOMER, INBOUND_SID)
    finally:
        await channel.close()
    assert failed.value.retryable is retryable
    assert str(status) in str(failed.value)
    assert len(fake.typing) == 1


async def test_typing_to_an_unreachable_or_unconfigured_twilio_fails(unused_tcp_port: int) -> None:
    channel = sender(f"http://127.0.0.1:{unused_tcp_port}")
    try:
        with pytest.raises(SendFailed) as failed:
            await channel.typing(CUSTOMER, INBOUND_SID)
    finally:
        await channel.close()
    assert failed.value.retryable
    unconfigured = TwilioWhatsAppChannel(
        account_sid=None, auth_token=None, sender=None, public_url=None, clock=lambda: NOW
    )
    with pytest.raises(SendFailed) as failed:
        await unconfigured.typing(CUSTOMER, INBOUND_SID)
    assert not failed.value.retryable


PHOTO = "https://cdn.example.org/catalogo/tenis-azul.jpg"
MANUAL = "https://cdn.example.org/manuais/garantia.pdf"


async def test_an_attachment_goes_with_the_text_as_media_url(
    twilio: tuple[FakeTwilio, str],
) -> None:
    fake, base = twilio
    channel = sender(base)
    message = OutboundMessage(
        "whatsapp", CUSTOMER, "Segue a foto do tênis.", media=(Media(PHOTO, "image/jpeg"),)
    )
    try:
        result = await channel.send(message)
    finally:
        await channel.close()
    [created] = fake.created
    assert (created["Body"], created["MediaUrl"], created["To"]) == (
        "Segue a foto do tênis.",
        PHOTO,
        CUSTOMER,
    )
    assert len(result.provider_message_ids) == 1


async def test_further_attachments_and_a_long_text_go_in_order(
    twilio: tuple[FakeTwilio, str],
) -> None:
    fake, base = twilio
    channel = sender(base)
    text = " ".join(f"Frase número {i:03d} da resposta longa." for i in range(60))
    media = (Media(PHOTO, "image/jpeg"), Media(MANUAL, "application/pdf"))
    try:
        result = await channel.send(OutboundMessage("whatsapp", CUSTOMER, text, media=media))
    finally:
        await channel.close()
    assert len(fake.created) == 3 == len(result.provider_message_ids)
    first, second, last = fake.created
    assert first["MediaUrl"] == PHOTO and first["Body"].startswith("Frase número 000")
    assert "MediaUrl" not in second and second["Body"].endswith("longa.")
    assert last["MediaUrl"] == MANUAL and "Body" not in last  # an attachment of its own
    assert " ".join([first["Body"], second["Body"]]) == text


async def test_an_attachment_without_text_is_sent_alone(twilio: tuple[FakeTwilio, str]) -> None:
    fake, base = twilio
    channel = sender(base)
    try:
        await channel.send(OutboundMessage("whatsapp", CUSTOMER, "", media=(Media(MANUAL),)))
    finally:
        await channel.close()
    assert [(f.get("Body"), f["MediaUrl"]) for f in fake.created] == [(None, MANUAL)]


async def test_without_text_each_attachment_carries_its_caption(
    twilio: tuple[FakeTwilio, str],
) -> None:
    fake, base = twilio
    channel = sender(base)
    media = (Media(PHOTO, caption="Tênis azul"), Media(MANUAL, caption="Garantia"))
    try:
        await channel.send(OutboundMessage("whatsapp", CUSTOMER, "", media=media))
    finally:
        await channel.close()
    assert [(f["Body"], f["MediaUrl"]) for f in fake.created] == [
        ("Tênis azul", PHOTO),
        ("Garantia", MANUAL),
    ]


def test_a_json_body_without_its_url_hash_is_refused_not_a_crash() -> None:
    # Twilio signs JSON only through bodySHA256 in the URL; without it there is nothing to
    # check the signature against (the validator would raise TypeError on the body).
    body = b'{"From": "whatsapp:+5511998765432"}'
    for signature in ("anything", RequestValidator("12345").compute_signature("https://x/", {})):
        request = RawRequest(
            "POST",
            "https://x/",
            {"Content-Type": "application/json", "X-Twilio-Signature": signature},
            body,
        )
        with pytest.raises(SignatureInvalid, match="bodySHA256"):
            channel().verify(request)

"""Every kind of WhatsApp message Twilio delivers, parsed from its form webhook.

Where no recorded capture exists, the payloads are the recorded image sample
(`inbound_image.form.txt`) with the parameters Twilio documents for current WhatsApp webhooks
added or changed ("Twilio's request to your incoming message Webhook URL",
https://www.twilio.com/docs/messaging/guides/webhook-request: `MessageType`, `ProfileName`,
`WaId`, `OriginalRepliedMessageSid`, `MediaContentType{i}`/`MediaUrl{i}`, the caption in `Body`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlencode

import pytest

from channels.base import InboundMessage, RawRequest
from channels.twilio_whatsapp import AUDIO_PLACEHOLDER, TwilioWhatsAppChannel
from tests.support.fixtures import FIXTURES

SAMPLE = dict(parse_qsl((FIXTURES / "twilio_whatsapp" / "inbound_image.form.txt").read_text()))
MEDIA_URL = SAMPLE["MediaUrl0"]
NOW = datetime(2026, 12, 2, tzinfo=UTC)


def parse(**changes: str) -> InboundMessage:
    params = {**SAMPLE, "ProfileName": "Ana", "WaId": "31612345678", **changes}
    channel = TwilioWhatsAppChannel(
        account_sid=SAMPLE["AccountSid"],
        auth_token="12345",
        sender="whatsapp:+14123456789",
        public_url=None,
        clock=lambda: NOW,
    )
    request = RawRequest(
        "POST", "https://x/webhooks/twilio/whatsapp", {}, urlencode(params).encode()
    )
    [message] = channel.parse(request).messages
    return message


def test_an_image_with_a_caption_reads_as_the_bracketed_caption() -> None:
    message = parse(MessageType="image", Body="Minha fatura de novembro")
    assert message.kind == "image"
    assert message.text == "[image: Minha fatura de novembro]"
    [media] = message.media
    assert (media.url, media.content_type) == (MEDIA_URL, "image/jpeg")
    assert media.caption == "Minha fatura de novembro"


@pytest.mark.parametrize(
    ("message_type", "content_type", "kind", "text"),
    [
        ("document", "application/pdf", "document", "[document]"),
        ("video", "video/mp4", "video", "[video]"),
        ("sticker", "image/webp", "sticker", "[sticker]"),
        # Without MessageType (older webhooks) the kind follows the content type.
        ("", "application/pdf", "document", "[document]"),
        ("", "video/mp4", "video", "[video]"),
        ("", "image/webp", "sticker", "[sticker]"),
        ("", "image/png", "image", "[image]"),
        ("", "application/octet-stream", "document", "[document]"),
        ("", "model/gltf-binary", "media", "[attachment]"),
    ],
)
def test_each_attachment_kind(message_type: str, content_type: str, kind: str, text: str) -> None:
    message = parse(MessageType=message_type, MediaContentType0=content_type)
    assert (message.kind, message.text) == (kind, text)
    assert message.media[0].content_type == content_type
    assert message.media[0].url == MEDIA_URL  # a reference: nothing is downloaded


def test_a_document_caption_is_kept_on_the_attachment() -> None:
    message = parse(MessageType="document", MediaContentType0="application/pdf", Body="contrato")
    assert message.text == "[document: contrato]"
    assert message.media[0].caption == "contrato"


def test_a_voice_note_stays_a_voice_note_for_transcription() -> None:
    message = parse(MessageType="audio", MediaContentType0="audio/ogg")
    assert (message.kind, message.text) == ("voice", AUDIO_PLACEHOLDER)
    assert message.media[0].caption is None
    older = parse(MediaContentType0="audio/ogg; codecs=opus")
    assert older.kind == "voice"


def test_a_shared_contact_is_a_vcard_reference() -> None:
    message = parse(MessageType="contacts", MediaContentType0="text/vcard")
    assert (message.kind, message.text) == ("contact", "[contact]")
    assert message.media[0].content_type == "text/vcard"
    assert parse(MediaContentType0="text/x-vcard").kind == "contact"


def test_a_reply_names_the_message_it_answers() -> None:
    replied = "SM" + "3f" * 16
    message = parse(
        MessageType="text",
        NumMedia="0",
        Body="Sim, esse mesmo",
        OriginalRepliedMessageSid=replied,
        OriginalRepliedMessageSender="whatsapp:+14123456789",
    )
    assert (message.kind, message.text) == ("text", "Sim, esse mesmo")
    assert message.media == ()
    assert message.reply_to_provider_id == replied


def test_a_location_declared_by_its_message_type() -> None:
    message = parse(
        MessageType="location",
        NumMedia="0",
        Latitude="-23.5505",
        Longitude="-46.6333",
        Label="Loja Centro",
    )
    assert message.kind == "location"
    assert message.text == "[location] Loja Centro (-23.5505, -46.6333)"


def test_a_reaction_and_an_unsupported_message() -> None:
    reaction = parse(MessageType="reaction", NumMedia="0", Body="👍")
    assert (reaction.kind, reaction.text) == ("reaction", "[reaction] 👍")
    unsupported = parse(MessageType="unsupported", NumMedia="0", Body="")
    assert (unsupported.kind, unsupported.text) == ("text", "[unsupported message]")
    assert parse(MessageType="text", NumMedia="0", Body="").text == ""


def test_several_attachments_are_each_described() -> None:
    second = MEDIA_URL.replace("ME5f0a", "ME6a1b")
    message = parse(
        NumMedia="2",
        MediaContentType1="image/png",
        MediaUrl1=second,
        Body="as duas fotos",
    )
    assert [m.url for m in message.media] == [MEDIA_URL, second]
    assert message.text == "[image: as duas fotos] [image]"

"""Every parser meets arbitrary input with a typed result or `PayloadInvalid`, never an
unhandled exception (hypothesis over random bytes, forms and JSON)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from channels.base import PayloadInvalid, RawRequest
from channels.transcripts import FORMATS, parse_transcript
from channels.twilio_whatsapp import TwilioWhatsAppChannel
from channels.webchat import WebChatChannel

NOW = datetime(2026, 11, 29, tzinfo=UTC)
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=25,
)
TWILIO_KEYS = [
    "MessageSid",
    "From",
    "To",
    "Body",
    "NumMedia",
    "MediaUrl0",
    "MediaContentType0",
    "Latitude",
    "Longitude",
    "ButtonText",
    "MessageType",
    "ProfileName",
    "WaId",
]


async def _deliver(_: object) -> None:
    return None


def _twilio() -> TwilioWhatsAppChannel:
    return TwilioWhatsAppChannel(
        account_sid=None, auth_token="t", sender=None, public_url=None, clock=lambda: NOW
    )


@FUZZ
@given(st.binary(max_size=400))
def test_twilio_parse_survives_any_bytes(body: bytes) -> None:
    try:
        _twilio().parse(RawRequest("POST", "https://x/y", {}, body))
    except PayloadInvalid:
        pass


@FUZZ
@given(st.dictionaries(st.sampled_from(TWILIO_KEYS), st.text(max_size=30), max_size=10))
def test_twilio_parse_survives_any_form(fields: dict[str, str]) -> None:
    body = urlencode(fields).encode()
    try:
        [message] = _twilio().parse(RawRequest("POST", "https://x/y", {}, body)).messages
    except PayloadInvalid:
        return
    assert message.provider_message_id and message.sender


@FUZZ
@given(json_values)
def test_webchat_parse_survives_any_json(value: Any) -> None:
    channel = WebChatChannel(_deliver, lambda: NOW)
    body = json.dumps(value).encode()
    try:
        [message] = channel.parse(
            RawRequest("POST", "https://x/webchat/messages", {}, body)
        ).messages
    except PayloadInvalid:
        return
    assert message.channel == "webchat" and message.text.strip()


@FUZZ
@given(st.sampled_from(FORMATS), json_values, st.none() | st.text(max_size=6))
def test_transcript_parsers_survive_any_json(fmt: str, payload: Any, speaker: str | None) -> None:
    if not isinstance(payload, dict):
        payload = {"segments": payload}
    try:
        parsed = parse_transcript(fmt, payload, customer_speaker=speaker)
    except PayloadInvalid:
        return
    assert all(s.speaker in ("customer", "agent") for s in parsed.segments)

"""Twilio webhook bodies (form-encoded) through `TwilioWhatsAppChannel.parse` and
`parse_status`: a message, `PayloadInvalid`, or a crash.

    .venv/bin/python fuzz/twilio_form.py -runs=100000
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

import atheris
from structured import keys_of, run  # first: puts the repository on sys.path

with atheris.instrument_imports(include=["channels"]):
    import channels.twilio_whatsapp as twilio
    from channels.base import PayloadInvalid, RawRequest


NOW = datetime(2026, 11, 29, tzinfo=UTC)
KEYS = [k for k in keys_of(twilio) if k[:1].isupper()] + [f"MediaUrl{i}" for i in range(12)]
CHANNEL = twilio.TwilioWhatsAppChannel(
    account_sid=None, auth_token="t", sender=None, public_url=None, clock=lambda: NOW
)


def body_of(fdp: atheris.FuzzedDataProvider) -> bytes:
    if fdp.ConsumeBool():
        return fdp.ConsumeBytes(fdp.remaining_bytes())
    fields = [
        (fdp.PickValueInList(KEYS), fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 40)))
        for _ in range(fdp.ConsumeIntInRange(0, 12))
    ]
    return urlencode(fields).encode()


def test(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    request = RawRequest("POST", "https://example.test/webhooks/twilio/whatsapp", {}, body_of(fdp))
    try:
        [message] = CHANNEL.parse(request).messages
        assert message.provider_message_id and message.sender
    except PayloadInvalid:
        pass
    try:
        CHANNEL.parse_status(request)
    except PayloadInvalid:
        pass


if __name__ == "__main__":
    run(test)

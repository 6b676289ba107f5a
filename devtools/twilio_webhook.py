"""Twilio WhatsApp webhooks as Twilio sends them: the form fields of an inbound text, encoded
and signed (``X-Twilio-Signature``) over the URL Twilio calls, i.e. the gateway's public URL
plus the webhook path. The demo, the benchmarks and the tests all sign here."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

from twilio.request_validator import RequestValidator

WHATSAPP_PATH = "/webhooks/twilio/whatsapp"
BOT = "whatsapp:+14155238886"  # the sandbox number the messages are sent to
FORM = "application/x-www-form-urlencoded"


def inbound_text(
    sid: str, sender: str, text: str, *, account: str, profile_name: str, to: str = BOT
) -> dict[str, str]:
    """The fields of an inbound WhatsApp text ``sid`` from ``sender`` (``whatsapp:+55…`` or
    the bare E.164 number)."""
    phone = sender.removeprefix("whatsapp:")
    return {
        "MessageSid": sid,
        "AccountSid": account,
        "From": f"whatsapp:{phone}",
        "To": to,
        "Body": text,
        "NumMedia": "0",
        "ProfileName": profile_name,
        "WaId": phone.lstrip("+"),
        "MessageType": "text",
    }


def signed_form(
    url: str, params: Mapping[str, str], auth_token: str
) -> tuple[dict[str, str], bytes]:
    """The headers (``Content-Type`` and ``X-Twilio-Signature``) and the form body of the
    webhook Twilio would POST to ``url`` with ``params``, signed with ``auth_token``."""
    signature = RequestValidator(auth_token).compute_signature(url, dict(params))
    headers = {"Content-Type": FORM, "X-Twilio-Signature": signature}
    return headers, urlencode(params).encode()

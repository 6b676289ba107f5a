"""Twilio WhatsApp webhooks as Twilio sends them: form-encoded, signed over the public URL."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from twilio.request_validator import RequestValidator

PATH = "/webhooks/twilio/whatsapp"
BOT = "whatsapp:+14155238886"


def inbound_params(sid: str, sender: str, text: str, *, account: str) -> dict[str, str]:
    return {
        "MessageSid": sid,
        "AccountSid": account,
        "From": sender,
        "To": BOT,
        "Body": text,
        "NumMedia": "0",
        "ProfileName": "Ana",
        "MessageType": "text",
    }


async def post_signed(
    client: Any, params: dict[str, str], *, token: str, public_url: str, path: str = PATH
) -> Any:
    """POST `params` to `client` (an aiohttp test client), signed as Twilio would sign them for
    `public_url` + `path`; the response, its body read."""
    signature = RequestValidator(token).compute_signature(public_url + path, params)
    response = await client.post(
        path,
        data=urlencode(params).encode(),
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Twilio-Signature": signature,
        },
    )
    await response.read()
    return response

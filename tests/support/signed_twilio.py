"""Twilio WhatsApp webhooks as Twilio sends them: form-encoded, signed over the public URL
(`devtools.twilio_webhook`, where the benchmarks and the demo sign theirs)."""

from __future__ import annotations

import uuid
from typing import Any

from devtools.twilio_webhook import BOT, WHATSAPP_PATH, inbound_text, signed_form

PATH = WHATSAPP_PATH

__all__ = ["BOT", "PATH", "inbound_params", "post_orders", "post_signed"]


def inbound_params(sid: str, sender: str, text: str, *, account: str) -> dict[str, str]:
    return inbound_text(sid, sender, text, account=account, profile_name="Ana")


async def post_signed(
    client: Any, params: dict[str, str], *, token: str, public_url: str, path: str = PATH
) -> Any:
    """POST `params` to `client` (an aiohttp test client), signed as Twilio would sign them for
    `public_url` + `path`; the response, its body read."""
    headers, body = signed_form(public_url + path, params, token)
    response = await client.post(path, data=body, headers=headers)
    await response.read()
    return response


async def post_orders(
    client: Any, count: int, *, account: str, token: str, public_url: str
) -> list[str]:
    """`count` signed messages ("pedido 0", "pedido 1", …) from one new sender, each answered
    200; their message sids, in order."""
    sender = f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"
    sids = [f"SM{uuid.uuid4().hex}" for _ in range(count)]
    for i, sid in enumerate(sids):
        params = inbound_params(sid, sender, f"pedido {i}", account=account)
        response = await post_signed(client, params, token=token, public_url=public_url)
        assert response.status == 200, await response.text()
    return sids

"""The console profile shows a message's attachments as links under its text (the window's
`[image: caption]` stays the text); a URL that is not http(s) is never made a link."""

from __future__ import annotations

import html
import re
import uuid
from pathlib import Path

from sqlalchemy import select

from gateway.keys import SESSIONS
from gateway.operators.accounts import create_operator
from gateway.storage.models import Message
from tests.support.console import PASSWORD, USERNAME, log_in
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.whatsapp_stack import ACCOUNT, TOKEN, whatsapp_stack

NUMBER = "+5511998765432"
PHOTO = (
    f"https://api.twilio.com/2010-04-01/Accounts/{ACCOUNT}/Messages/MM{'1' * 32}/Media/ME{'2' * 32}"
)


async def test_a_photo_is_a_link_on_the_profile(tmp_path: Path) -> None:
    async with whatsapp_stack(tmp_path, public_url="http://relay.example.org") as gateway:
        async with gateway.stack.client.app[SESSIONS].begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
        params = inbound_params(
            f"MM{uuid.uuid4().hex}", f"whatsapp:{NUMBER}", "A caixa veio amassada", account=ACCOUNT
        )
        params.update(
            MessageType="image", NumMedia="1", MediaContentType0="image/jpeg", MediaUrl0=PHOTO
        )
        response = await post_signed(
            gateway.stack.client, params, token=TOKEN, public_url=gateway.public_url
        )
        assert response.status == 200
        await gateway.stack.idle()
        async with gateway.stack.client.app[SESSIONS]() as session:
            stored = await session.scalar(select(Message).where(Message.role == "user"))
        assert stored is not None

        client = gateway.stack.client
        await log_in(client)
        page = await (await client.get(f"/console/customers/{stored.customer_id}")).text()
        item = re.search(rf'<li id="message-{stored.id}"[^>]*>(.*?)</li>', page, re.DOTALL)
        assert item is not None
        assert "[image: A caixa veio amassada]" in item.group(1)
        links = re.findall(r'<a href="([^"]+)" class="attachment"[^>]*>([^<]*)</a>', item.group(1))
        assert [(html.unescape(href), label) for href, label in links] == [
            (PHOTO, "📎 A caixa veio amassada")
        ]

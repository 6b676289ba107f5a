"""A conversation's console page shows, read-only, the settings it follows: its tenant's and
channel's levels over the built-in defaults."""

from __future__ import annotations

from sqlalchemy import select

from gateway.storage.models import Conversation
from gateway.tenant_ref import TenantRef
from tests.support.console import AUTH, log_in
from tests.support.stack import Stack
from tests.support.webchat import signed_visitor

HOST = "shop.example.com"


async def _conversation_through(stack: Stack, host: str) -> str:
    visitor = await signed_visitor(stack.client)
    response = await stack.client.post(
        "/webchat/messages",
        json={"visitor_id": visitor, "text": "oi", "client_message_id": "m1"},
        headers={"Host": host},
    )
    assert response.status == 202
    await stack.idle()
    async with stack.sessions()() as session:
        found = await session.scalar(
            select(Conversation.id).where(Conversation.tenant == TenantRef.for_host(host).encode())
        )
    assert found is not None
    return str(found)


async def test_the_conversation_page_shows_the_settings_it_follows(stack: Stack) -> None:
    response = await stack.client.put(
        f"/v1/settings/domain/default/host/{HOST}/channel/webchat",
        json={
            "settings": {"handoff_message": "Um colega já vem <b>falar</b>", "retention_days": 30},
            "reason": "shop",
        },
        headers=AUTH,
    )
    assert response.status == 200, await response.text()
    shop = await _conversation_through(stack, HOST)
    other = await _conversation_through(stack, "other.example.org")
    await log_in(stack.client)

    page = await (await stack.client.get(f"/console/conversations/{shop}")).text()
    assert 'id="effective-settings"' in page
    assert f"default/{HOST}" in page and "webchat" in page
    # The tenant's text, escaped like every value on the page.
    assert "Um colega já vem &lt;b&gt;falar&lt;/b&gt;" in page
    assert "30 days" in page and "&quot;retention_days&quot;: 30" in page

    page = await (await stack.client.get(f"/console/conversations/{other}")).text()
    assert "built-in, in the customer&#x27;s language" in page
    assert "Every setting is the built-in default." in page

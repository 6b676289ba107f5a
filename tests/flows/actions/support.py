"""What the action flows share: a gateway that signs assertions and may reach local servers, a
local business API, the tenant's settings saved."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer
from sqlalchemy import select

from gateway.storage.models import Message, TurnRow
from gateway.storage.repositories import tenants
from tests.support.openai_server import model_settings
from tests.support.stack import Stack, running_stack

IDENTITY_KEY = "an-identity-key-of-at-least-32-bytes!"


@asynccontextmanager
async def acting_stack(tmp_path: Path, model_url: str, **settings: object) -> AsyncIterator[Stack]:
    """The embedded gateway on the model at ``model_url``, signing assertions with
    `IDENTITY_KEY`, allowed to call servers on loopback (``settings``: more of its own)."""
    async with running_stack(
        "embedded",
        tmp_path,
        RELAYDESK_TOOL_IDENTITY_KEY=IDENTITY_KEY,
        RELAYDESK_FETCH_ALLOW="127.0.0.1",
        **model_settings(model_url),
        **settings,
    ) as stack:
        yield stack


@asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """``app`` on a local port; yields its base URL (no trailing slash)."""
    server = TestServer(app)
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


async def save_settings(stack: Stack, settings: dict[str, Any]) -> None:
    """The domain's tenant settings."""
    async with stack.sessions().begin() as session:
        await tenants.save_tenant_settings(session, domain="default", settings=settings)


async def say_on_webchat(stack: Stack, visitor: str, text: str, client_message_id: str) -> int:
    """``text`` from the web chat ``visitor``, stored and answered; its message id."""
    response = await stack.client.post(
        "/webchat/messages",
        json={"visitor_id": visitor, "text": text, "client_message_id": client_message_id},
    )
    assert response.status == 202, await response.text()
    message_id = int((await response.json())["message_id"])
    await stack.idle()
    return message_id


async def reply_to(stack: Stack, message_id: int) -> str:
    """The text of the reply the turn of ``message_id`` stored."""
    async with stack.sessions()() as session:
        turn = await session.scalar(select(TurnRow).where(TurnRow.inbound_message_id == message_id))
        assert turn is not None and turn.reply_message_id is not None
        reply = await session.get(Message, turn.reply_message_id)
        assert reply is not None
        return reply.text

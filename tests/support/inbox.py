"""Inbox conversations that come in through real webhooks: a WhatsApp customer (Twilio,
with a `ProfileName`), a Telegram customer (first and last name), a web chat visitor who states
her name, and an anonymous visitor with a signed visitor id of about a hundred characters."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import select

from channels.telegram import SECRET_HEADER
from devtools.twilio_webhook import inbound_text
from gateway.operators.accounts import create_operator
from gateway.storage.models import Message
from gateway.storage.records import NewFact
from gateway.storage.repositories import facts
from gateway.storage.repositories.operators import OperatorRole
from tests.support.console import PASSWORD, USERNAME
from tests.support.signed_twilio import post_signed
from tests.support.stack import Stack, running_stack
from tests.support.webchat import signed_visitor

TWILIO_TOKEN = "twilio-auth-token-for-tests"
PUBLIC_URL = "https://relay.example.org"
TELEGRAM_TOKEN = "123456:TEST-token_abcdefghijklmnop"
TELEGRAM_SECRET = "webhook-secret_for-tests"


@asynccontextmanager
async def inbox_stack(tmp_path: Path, bot_api_base: str) -> AsyncIterator[Stack]:
    """An embedded gateway taking WhatsApp and Telegram webhooks, with the console's admin."""
    settings = {
        "RELAYDESK_PUBLIC_URL": PUBLIC_URL,
        "TWILIO_AUTH_TOKEN": TWILIO_TOKEN,
        "TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN,
        "TELEGRAM_WEBHOOK_SECRET": TELEGRAM_SECRET,
        "TELEGRAM_API_BASE": bot_api_base,
    }
    async with running_stack("embedded", tmp_path, **settings) as running:
        async with running.sessions().begin() as session:
            await create_operator(session, USERNAME, PASSWORD, role=OperatorRole.ADMIN)
        yield running


async def whatsapp_message(stack: Stack, phone: str, profile_name: str, text: str) -> None:
    params = inbound_text(
        f"SM{uuid.uuid4().hex}",
        f"whatsapp:{phone}",
        text,
        account="AC" + "0" * 32,
        profile_name=profile_name,
    )
    response = await post_signed(stack.client, params, token=TWILIO_TOKEN, public_url=PUBLIC_URL)
    assert response.status == 200, await response.text()


async def _telegram(stack: Stack, user_id: int, first: str, last: str, text: str) -> None:
    update_id = random.randrange(10**8, 10**9)
    sender = {"id": user_id, "is_bot": False, "first_name": first, "last_name": last}
    body = {
        "update_id": update_id,
        "message": {
            "message_id": update_id % 100_000,
            "date": 1764400000,
            "from": sender,
            "chat": {"id": user_id, "type": "private", "first_name": first},
            "text": text,
        },
    }
    response = await stack.client.post(
        "/webhooks/telegram", json=body, headers={SECRET_HEADER: TELEGRAM_SECRET}
    )
    assert response.status == 200, await response.text()


async def _webchat(stack: Stack, text: str) -> str:
    visitor = await signed_visitor(stack.client)
    body = {"visitor_id": visitor, "text": text, "client_message_id": uuid.uuid4().hex}
    response = await stack.client.post("/webchat/messages", json=body)
    assert response.status == 202, await response.text()
    return visitor


async def _states_her_name(stack: Stack, visitor: str, name: str) -> None:
    """The name fact the memory keeps when a visitor says her name, sourced to her message."""
    async with stack.sessions().begin() as session:
        message = (
            await session.execute(
                select(Message.id, Message.customer_id).where(
                    Message.thread_key == f"webchat:{visitor}", Message.role == "user"
                )
            )
        ).one()
        await facts.record_fact(
            session, message.customer_id, NewFact("name", name, "public", message.id)
        )


async def seed_inbox(stack: Stack) -> tuple[str, str]:
    """Four conversations; the anonymous visitor's id and the telegram user id."""
    await whatsapp_message(stack, "+5511987654321", "Ana Souza", "Oi, meu pedido não chegou")
    telegram_user = random.randrange(10**8, 10**9)
    await _telegram(stack, telegram_user, "João", "Pereira", "Olá, preciso de ajuda")
    carla = await _webchat(stack, "Oi, aqui é a Carla Mendes")
    anonymous = await _webchat(stack, "Quanto custa o frete?")
    await stack.idle()
    await _states_her_name(stack, carla, "Carla Mendes")
    return anonymous, str(telegram_user)

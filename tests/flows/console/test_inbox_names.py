"""The names of the inbox, from conversations that came in through real webhooks: a WhatsApp
customer by the `ProfileName` Twilio sends, a Telegram customer by their first and last name,
a web chat visitor who stated her name by that name fact, and an anonymous visitor (a signed
visitor id of about a hundred characters) by a short masked id — the raw id never shown, in
the operator API or on the page at 1366×768 and at 390×844."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select

from channels.telegram import SECRET_HEADER
from devtools.twilio_webhook import inbound_text
from gateway.operators.accounts import create_operator
from gateway.storage.models import Message
from gateway.storage.records import NewFact
from gateway.storage.repositories import facts
from gateway.storage.repositories.operators import OperatorRole
from tests.support.browser import screenshot
from tests.support.console import AUTH, PASSWORD, USERNAME
from tests.support.signed_twilio import post_signed
from tests.support.stack import Stack, running_stack
from tests.support.telegram_server import FakeBotApi
from tests.support.webchat import signed_visitor

try:
    from playwright.async_api import Browser, expect
except ImportError:  # the browser fixture skips
    pass

TWILIO_TOKEN = "twilio-auth-token-for-tests"
PUBLIC_URL = "https://relay.example.org"
TELEGRAM_TOKEN = "123456:TEST-token_abcdefghijklmnop"
TELEGRAM_SECRET = "webhook-secret_for-tests"
WAIT_MS = 10_000


@pytest.fixture
async def stack(tmp_path: Path, bot_api: tuple[FakeBotApi, str]) -> AsyncIterator[Stack]:
    settings = {
        "RELAYDESK_PUBLIC_URL": PUBLIC_URL,
        "TWILIO_AUTH_TOKEN": TWILIO_TOKEN,
        "TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN,
        "TELEGRAM_WEBHOOK_SECRET": TELEGRAM_SECRET,
        "TELEGRAM_API_BASE": bot_api[1],
    }
    async with running_stack("embedded", tmp_path, **settings) as running:
        async with running.sessions().begin() as session:
            await create_operator(session, USERNAME, PASSWORD, role=OperatorRole.ADMIN)
        yield running


async def _whatsapp(stack: Stack, phone: str, profile_name: str, text: str) -> None:
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


async def _seed(stack: Stack) -> tuple[str, str]:
    """Four conversations; the anonymous visitor's id and the telegram user id."""
    await _whatsapp(stack, "+5511987654321", "Ana Souza", "Oi, meu pedido não chegou")
    telegram_user = random.randrange(10**8, 10**9)
    await _telegram(stack, telegram_user, "João", "Pereira", "Olá, preciso de ajuda")
    carla = await _webchat(stack, "Oi, aqui é a Carla Mendes")
    anonymous = await _webchat(stack, "Quanto custa o frete?")
    await stack.idle()
    await _states_her_name(stack, carla, "Carla Mendes")
    return anonymous, str(telegram_user)


async def _names(stack: Stack) -> dict[str, list[str]]:
    response = await stack.client.get("/v1/operator/conversations", headers=AUTH)
    assert response.status == 200, await response.text()
    listed: dict[str, list[str]] = {}
    for c in (await response.json())["conversations"]:
        listed.setdefault(c["channel"], []).append(c["name"])
    return listed


async def test_each_conversation_is_named_by_the_best_evidence_never_by_a_raw_id(
    stack: Stack,
) -> None:
    anonymous, telegram_user = await _seed(stack)
    assert len(anonymous) > 60  # the long signed id the list must not show

    names = await _names(stack)

    assert names["whatsapp"] == ["Ana Souza"]
    assert names["telegram"] == ["João Pereira"]
    assert len(names["webchat"]) == 2 and "Carla Mendes" in names["webchat"]
    masked = next(name for name in names["webchat"] if name != "Carla Mendes")
    assert masked.startswith("Web visitor ···")
    assert len(masked) < 24
    assert anonymous not in masked and telegram_user not in str(names)


async def test_a_stated_name_wins_over_the_profile_name(stack: Stack) -> None:
    await _whatsapp(stack, "+5511912345678", "Bia", "Oi")
    await stack.idle()
    async with stack.sessions().begin() as session:
        message = (
            await session.execute(
                select(Message.id, Message.customer_id).where(
                    Message.channel == "whatsapp", Message.role == "user"
                )
            )
        ).one()
        await facts.record_fact(
            session, message.customer_id, NewFact("name", "Beatriz Lima", "public", message.id)
        )

    assert (await _names(stack))["whatsapp"] == ["Beatriz Lima"]


@pytest.mark.parametrize("size", [(1366, 768), (390, 844)], ids=["1366", "390"])
async def test_the_list_and_the_thread_show_the_names(
    browser: Browser, stack: Stack, size: tuple[int, int]
) -> None:
    anonymous, _ = await _seed(stack)
    width, height = size
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    await page.goto(str(stack.client.make_url("/console/login")))
    await page.get_by_label("Username").fill(USERNAME)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    rows = page.locator("tr[data-conversation]")
    await expect(rows).to_have_count(4, timeout=WAIT_MS)
    for name in ("Ana Souza", "João Pereira", "Carla Mendes", "Web visitor ···"):
        await expect(page.locator("body")).to_contain_text(name)
    assert anonymous not in await page.locator("body").inner_text()
    await screenshot(page, f"inbox-names-{width}.png")

    await page.get_by_role("link", name="Ana Souza").click()
    await expect(page.locator("#title")).to_have_text("Ana Souza · whatsapp", timeout=WAIT_MS)
    await context.close()

"""The names of the inbox, from conversations that came in through real webhooks: a WhatsApp
customer by the `ProfileName` Twilio sends, a Telegram customer by their first and last name,
a web chat visitor who stated her name by that name fact, and an anonymous visitor (a signed
visitor id of about a hundred characters) by a short masked id — the raw id never shown, in
the operator API or on the page at 1366×768 and at 390×844."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select

from gateway.storage.models import Message
from gateway.storage.records import NewFact
from gateway.storage.repositories import facts
from tests.support.browser import screenshot
from tests.support.console import AUTH, PASSWORD, USERNAME
from tests.support.inbox import inbox_stack, seed_inbox, whatsapp_message
from tests.support.stack import Stack
from tests.support.telegram_server import FakeBotApi

try:
    from playwright.async_api import Browser, expect
except ImportError:  # the browser fixture skips
    pass

WAIT_MS = 10_000


@pytest.fixture
async def stack(tmp_path: Path, bot_api: tuple[FakeBotApi, str]) -> AsyncIterator[Stack]:
    async with inbox_stack(tmp_path, bot_api[1]) as running:
        yield running


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
    anonymous, telegram_user = await seed_inbox(stack)
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
    await whatsapp_message(stack, "+5511912345678", "Bia", "Oi")
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
    anonymous, _ = await seed_inbox(stack)
    width, height = size
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    await page.goto(str(stack.client.make_url("/console/login")))
    await page.get_by_label("Username").fill(USERNAME)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    rows = page.locator("li[data-conversation]")
    await expect(rows).to_have_count(4, timeout=WAIT_MS)
    for name in ("Ana Souza", "João Pereira", "Carla Mendes", "Web visitor ···"):
        await expect(page.locator("body")).to_contain_text(name)
    assert anonymous not in await page.locator("body").inner_text()
    await screenshot(page, f"inbox-names-{width}.png")

    await page.get_by_role("link", name="Ana Souza").click()
    await expect(page.locator("#title")).to_have_text("Ana Souza · whatsapp", timeout=WAIT_MS)
    await context.close()


async def test_the_customer_page_names_a_customer_by_the_channels_profile_name(
    browser: Browser, stack: Stack
) -> None:
    await seed_inbox(stack)
    response = await stack.client.get("/v1/operator/conversations?channel=whatsapp", headers=AUTH)
    customer_id = (await response.json())["conversations"][0]["customer_id"]
    context = await browser.new_context(viewport={"width": 1366, "height": 768})
    page = await context.new_page()
    await page.goto(str(stack.client.make_url("/console/login")))
    await page.get_by_label("Username").fill(USERNAME)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.locator("#live-status")).to_have_attribute("data-state", "live")

    await page.goto(str(stack.client.make_url(f"/console/customers/{customer_id}")))

    await expect(page).to_have_title("Ana Souza · Relaydesk")
    await expect(page.locator("main")).to_contain_text("Ana Souza · since")
    await expect(page.locator("main")).not_to_contain_text("no display name")
    await context.close()

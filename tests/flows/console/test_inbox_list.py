"""The inbox list: each row's last-message preview, relative time, channel mark and link
level; the views; the channel filter and the search in messages — through the operator API
and on the page in Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.support.browser import screenshot
from tests.support.console import AUTH, PASSWORD, USERNAME
from tests.support.inbox import inbox_stack, seed_inbox
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


async def _list(stack: Stack, query: str = "") -> list[dict[str, object]]:
    response = await stack.client.get(f"/v1/operator/conversations{query}", headers=AUTH)
    assert response.status == 200, await response.text()
    listed: list[dict[str, object]] = (await response.json())["conversations"]
    return listed


async def test_rows_carry_a_preview_a_link_level_and_the_tenant(stack: Stack) -> None:
    await seed_inbox(stack)
    rows = {str(row["name"]): row for row in await _list(stack)}

    ana = rows["Ana Souza"]
    assert str(ana["tenant"]).startswith("default")  # domain, then the host it came to
    assert isinstance(ana["preview"], dict) and ana["preview"]["from"] == "reply"
    text = ana["preview"]["text"]  # the bot's (offline) reply, cut short
    assert text.startswith("Relaydesk is running without") and text.endswith("…")
    assert len(text) == 120
    visitor = next(row for name, row in rows.items() if name.startswith("Web visitor"))
    assert visitor["link_level"] == "anonymous"


async def test_the_channel_filter_and_the_search_in_messages(stack: Stack) -> None:
    await seed_inbox(stack)

    assert [row["name"] for row in await _list(stack, "?channel=telegram")] == ["João Pereira"]
    found = await _list(stack, "?q=FRETE")
    assert len(found) == 1 and str(found[0]["name"]).startswith("Web visitor")
    assert await _list(stack, "?q=nothing-says-this") == []
    assert await _list(stack, "?q=frete&channel=whatsapp") == []
    tenant = str((await _list(stack))[0]["tenant"])
    assert len(await _list(stack, f"?tenant={quote(tenant)}")) == 4
    assert await _list(stack, "?tenant=another.example") == []


async def test_the_list_page_shows_previews_views_filters_and_search(
    browser: Browser, stack: Stack
) -> None:
    await seed_inbox(stack)
    context = await browser.new_context(viewport={"width": 1366, "height": 768})
    page = await context.new_page()
    await page.goto(str(stack.client.make_url("/console/login")))
    await page.get_by_label("Username").fill(USERNAME)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    rows = page.locator("section:not([hidden]) li[data-conversation]")
    await expect(rows).to_have_count(4, timeout=WAIT_MS)
    joao = rows.filter(has_text="João Pereira")
    await expect(joao.locator(".preview")).to_contain_text("↩ Relaydesk is running")
    await expect(joao.locator(".tag.channel")).to_contain_text("TG")
    await expect(joao.locator("time")).to_contain_text("ago")
    await expect(rows.filter(has_text="Web visitor").locator(".level")).to_have_text("anonymous")
    await screenshot(page, "inbox-list-rows-1366.png")

    await page.get_by_role("button", name="Waiting").click()
    await expect(rows).to_have_count(0, timeout=WAIT_MS)
    await page.get_by_role("button", name="With the bot").click()
    await expect(rows).to_have_count(4, timeout=WAIT_MS)
    await page.get_by_role("button", name="All", exact=True).click()

    await page.get_by_label("Channel").select_option("whatsapp")
    await expect(rows).to_have_count(1, timeout=WAIT_MS)
    await expect(rows).to_contain_text("Ana Souza")
    await page.get_by_label("Channel").select_option("")
    await expect(rows).to_have_count(4, timeout=WAIT_MS)

    await page.get_by_label("Search in messages").fill("frete")
    await page.get_by_role("button", name="Find in messages").click()
    await expect(rows).to_have_count(1, timeout=WAIT_MS)
    await expect(rows).to_contain_text("Web visitor")
    await context.close()

"""The inbox's layout in Chromium with a WhatsApp, a Telegram and two web chat conversations
(one with a visitor id of about a hundred characters): no page scrolls sideways at 1366×768 or
at 390×844; at 1366 the list page and the conversation both show list · thread · customer side
by side with the thread at least 40% of the width; on a phone the panes are views (the list
page is the list alone; in a conversation the list gives way to a back link and the customer
pane is reached by a link). Screenshots: `inbox-*.png`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import screenshot
from tests.support.console import PASSWORD, USERNAME
from tests.support.inbox import inbox_stack, seed_inbox
from tests.support.stack import Stack
from tests.support.telegram_server import FakeBotApi

try:
    from playwright.async_api import Browser, expect
except ImportError:  # the browser fixture skips
    pass

WAIT_MS = 10_000
OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture
async def stack(tmp_path: Path, bot_api: tuple[FakeBotApi, str]) -> AsyncIterator[Stack]:
    async with inbox_stack(tmp_path, bot_api[1]) as running:
        yield running


async def _console(browser: Browser, stack: Stack, width: int, height: int) -> Any:
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    await page.goto(str(stack.client.make_url("/console/login")))
    await page.get_by_label("Username").fill(USERNAME)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.locator("section li[data-conversation]")).to_have_count(4, timeout=WAIT_MS)
    return page


async def _open_the_anonymous_visitor(page: Any) -> None:
    await page.locator("section a.name", has_text="Web visitor").click()
    await expect(page.locator("#thread li.message")).to_have_count(2, timeout=WAIT_MS)
    await expect(page.locator("#profile h3").first).to_be_visible(timeout=WAIT_MS)


async def _three_panes_side_by_side(page: Any) -> None:
    boxes = [
        await page.locator(pane).bounding_box()
        for pane in ("#list-pane", "#thread-box", "#profile-box")
    ]
    assert all(box is not None for box in boxes)
    listed, thread, customer = boxes
    assert listed["x"] + listed["width"] <= thread["x"] < customer["x"]  # side by side
    assert thread["width"] >= 0.4 * 1366, thread


async def test_at_1366_three_panes_and_the_thread_takes_at_least_40_percent(
    browser: Browser, stack: Stack
) -> None:
    await seed_inbox(stack)
    page = await _console(browser, stack, 1366, 768)
    assert await page.evaluate(OVERFLOW) <= 0
    await screenshot(page, "inbox-list-1366.png")

    await _three_panes_side_by_side(page)
    await expect(page.locator("#queue-summary")).to_contain_text("With the bot4")

    await _open_the_anonymous_visitor(page)
    await expect(page.locator("#list-pane li[data-conversation]")).to_have_count(4, timeout=WAIT_MS)
    assert await page.evaluate(OVERFLOW) <= 0
    await _three_panes_side_by_side(page)
    await expect(page.locator("#list-pane a[aria-current=page]")).to_contain_text("Web visitor")
    await screenshot(page, "inbox-conversation-1366.png")


async def test_on_a_phone_the_panes_are_views_and_nothing_scrolls_sideways(
    browser: Browser, stack: Stack
) -> None:
    anonymous, _ = await seed_inbox(stack)
    page = await _console(browser, stack, 390, 844)
    assert await page.evaluate(OVERFLOW) <= 0
    await expect(page.locator("#list-pane")).to_be_visible()
    await expect(page.locator("#thread-box")).to_be_hidden()
    await expect(page.locator("#profile-box")).to_be_hidden()
    await screenshot(page, "inbox-list-390.png")

    await _open_the_anonymous_visitor(page)
    assert await page.evaluate(OVERFLOW) <= 0
    await expect(page.locator("#list-pane")).to_be_hidden()
    thread = await page.locator("#thread-box").bounding_box()
    assert thread is not None and thread["width"] >= 0.8 * 390
    assert anonymous not in await page.locator("#thread-box").inner_text()
    await screenshot(page, "inbox-conversation-390.png")

    await page.get_by_role("link", name="Customer details ↓").click()
    await expect(page.locator("#profile-box")).to_be_in_viewport()
    assert await page.evaluate(OVERFLOW) <= 0
    await page.get_by_role("link", name="← Conversations").click()
    await expect(page.locator("section li[data-conversation]")).to_have_count(4, timeout=WAIT_MS)

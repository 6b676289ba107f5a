"""Who speaks in the `/chat` widget, and when, in a real headless Chromium against a real gateway
with the offline model: the bot's reply is labelled "Bot", an operator's reply (sent through the
operator API) carries the operator's name, live and after a reload; every message shows its
time; and a long thread scrolls inside its own list while the page itself never scrolls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.app_settings import AUTH
from tests.support.browser import screenshot
from tests.support.stack import Stack, running_stack
from tests.support.widget import VISITOR_KEY, WAIT_MS

try:
    from playwright.async_api import Browser, Page, expect
except ImportError:  # the browser fixture skips and says why
    pass

OPERATOR = "Marta Lima"
OPERATOR_TEXT = "Hi, Marta here: I'm looking at your order now."
THREAD_LENGTH = 30


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack("embedded", tmp_path) as running:
        yield running


async def _open(browser: Browser, stack: Stack) -> Page:
    context = await browser.new_context(viewport={"width": 420, "height": 760})
    page = await context.new_page()
    await page.goto(str(stack.client.make_url("/chat")))
    await _connected(page)
    return page


async def _connected(page: Page) -> None:
    await expect(page.locator("#chat-status")).to_have_attribute(
        "data-state", "connected", timeout=WAIT_MS
    )


async def _send(page: Page, text: str) -> None:
    await page.get_by_label("Your message").fill(text)
    await page.get_by_role("button", name="Send").click()


async def _operator_writes(stack: Stack, visitor: str) -> None:
    """The operator takes the visitor's conversation and writes to it, through the API."""
    held = await stack.client.post(
        "/v1/operator/conversations/handoff",
        json={
            "channel": "webchat",
            "external_id": f"web:anon:{visitor}",
            "reason": "order question",
            "actor": OPERATOR,
        },
        headers=AUTH,
    )
    assert held.status == 200, await held.text()
    conversation = (await held.json())["id"]
    written = await stack.client.post(
        f"/v1/operator/conversations/{conversation}/messages",
        json={"text": OPERATOR_TEXT, "actor": OPERATOR},
        headers=AUTH,
    )
    assert written.status == 202, await written.text()


async def _authors(stack: Stack, visitor: str) -> list[tuple[str, str, str | None]]:
    response = await stack.client.get("/webchat/messages", params={"visitor_id": visitor})
    assert response.status == 200
    messages: list[dict[str, Any]] = (await response.json())["messages"]
    return [(m["role"], m["author"], m["author_name"]) for m in messages]


async def _scroll_y(page: Page) -> float:
    value = await page.evaluate("window.scrollY")
    assert isinstance(value, int | float)
    return value


async def _names(page: Page) -> list[str]:
    names: list[str] = await page.locator(".msg__author").all_text_contents()
    return names


async def _assert_times_shown(page: Page) -> None:
    """Every message shows a short time (hours and minutes), without hovering."""
    times = page.locator(".msg .msg__time")
    assert await times.count() == await page.locator(".msg").count()
    for text in await times.all_text_contents():
        assert any(ch.isdigit() for ch in text) and len(text) <= 8, text
    await expect(times.last).to_be_visible()


async def test_replies_name_their_writer_and_show_their_time(
    browser: Browser, stack: Stack
) -> None:
    page = await _open(browser, stack)
    visitor = await page.evaluate(f"localStorage.getItem({json.dumps(VISITOR_KEY)})")
    assert isinstance(visitor, str)

    await _send(page, "Where is my order 4471?")
    bot = page.locator(".msg--assistant").first
    await expect(bot).to_have_attribute("data-author", "bot", timeout=WAIT_MS)
    await expect(bot.locator(".msg__author")).to_have_text("Bot")
    await expect(bot.locator(".msg__author")).to_be_visible()

    # Live: the operator's reply arrives on the socket with the operator's name.
    await _operator_writes(stack, visitor)
    operator = page.locator(".msg--operator")
    await expect(operator).to_have_count(1, timeout=WAIT_MS)
    await expect(operator.locator(".msg__text")).to_have_text(OPERATOR_TEXT)
    await expect(operator.locator(".msg__author")).to_have_text(OPERATOR)
    # The visitor's own message is named for screen readers only.
    own = page.locator(".msg--user").first
    await expect(own.locator(".visually-hidden")).to_have_text("You")
    await expect(own.locator(".msg__author")).to_have_count(0)
    await _assert_times_shown(page)
    await screenshot(page, "chat-widget-operator.png")

    # The message API says who wrote each message, in typed fields.
    assert await _authors(stack, visitor) == [
        ("user", "customer", None),
        ("assistant", "bot", None),
        ("assistant", "operator", OPERATOR),
    ]

    # After a reload the backlog names them the same way.
    await page.reload()
    await _connected(page)
    await expect(page.locator(".msg")).to_have_count(3, timeout=WAIT_MS)
    assert await _names(page) == ["Bot", OPERATOR]
    await _assert_times_shown(page)
    await page.context.close()


async def test_a_long_thread_scrolls_in_its_list_and_never_the_page(
    browser: Browser, stack: Stack
) -> None:
    page = await _open(browser, stack)
    visitor = await page.evaluate(f"localStorage.getItem({json.dumps(VISITOR_KEY)})")
    assert isinstance(visitor, str)
    await _send(page, "Message 1")
    await expect(page.locator(".msg--bot")).to_have_count(1, timeout=WAIT_MS)
    await _operator_writes(stack, visitor)
    await expect(page.locator(".msg--operator")).to_have_count(1, timeout=WAIT_MS)

    # While the operator holds the conversation the bot stays silent: one bubble per message.
    for number in range(2, THREAD_LENGTH - 1):
        await _send(page, f"Message {number}")
        assert await _scroll_y(page) == 0, f"the page scrolled after message {number}"
    messages = page.locator(".msg")
    await expect(messages).to_have_count(THREAD_LENGTH, timeout=WAIT_MS)
    await expect(page.locator('.msg--user[data-status="sent"]')).to_have_count(
        THREAD_LENGTH - 2, timeout=WAIT_MS
    )

    assert await _scroll_y(page) == 0
    # Nothing below the widget to scroll to, even when asked.
    await page.evaluate("window.scrollTo(0, 100000)")
    assert await _scroll_y(page) == 0
    sizes = await page.evaluate(
        "({page: document.documentElement.scrollHeight, view: window.innerHeight,"
        " list: document.getElementById('chat-messages').scrollHeight,"
        " listView: document.getElementById('chat-messages').clientHeight})"
    )
    assert sizes["page"] <= sizes["view"], sizes
    assert sizes["list"] > sizes["listView"], sizes  # the thread overflows its list, not the page
    # The newest message is in sight, and so is the reply box.
    await expect(messages.last).to_contain_text(f"Message {THREAD_LENGTH - 2}")
    await expect(messages.last).to_be_in_viewport()
    await expect(page.get_by_label("Your message")).to_be_in_viewport()
    await _assert_times_shown(page)
    await screenshot(page, "chat-widget-long-thread.png")

    # Scrolling the thread back up moves the list only.
    await page.locator("#chat-messages").evaluate("list => { list.scrollTop = 0; }")
    await expect(messages.first).to_be_in_viewport()
    assert await _scroll_y(page) == 0
    await page.context.close()

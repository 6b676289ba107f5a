"""A reply citing the knowledge base in the `/chat` widget, in a real headless Chromium against a
real gateway and a model that cites `[k1]`: the bubble keeps the `[1]` markers in its text and
shows a "Sources" list under it, each document's title a link to its URL opened in a new tab
without the page as opener (a document without a URL by title alone), the title as text, never
markup; and the list is there again after a reload, from the stored reply."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

import pytest

from tests.support.browser import screenshot
from tests.support.cited_replies import add_public_document, citing_model
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.stack import Stack, running_stack
from tests.support.widget import WAIT_MS

try:
    from playwright.async_api import Browser, Locator, Page, expect
except ImportError:  # the browser fixture skips and says why
    pass

pytestmark = pytest.mark.serial

Scheme = Literal["light", "dark"]

# Markup in a title is text the widget shows as written.
RETURNS = "Returns & <b>refunds</b>"
RETURNS_URL = "https://shop.example.com/help/returns?lang=en"
SHIPPING = "Shipping times"
SENTENCES = (
    ("Returns are accepted within thirty days", RETURNS),
    ("Shipping takes two working days", SHIPPING),
)
REPLY = "Returns are accepted within thirty days [1]. Shipping takes two working days [2]."


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    model: FakeOpenAI = citing_model(SENTENCES)
    async with (
        model.serving() as model_url,
        running_stack("embedded", tmp_path, **model_settings(model_url)) as running,
    ):
        await add_public_document(
            running.client,
            RETURNS,
            "Returns are accepted within thirty days of delivery, with the receipt.",
            RETURNS_URL,
        )
        await add_public_document(
            running.client, SHIPPING, "Shipping takes two working days to any address."
        )
        yield running


async def _open(browser: Browser, stack: Stack, scheme: Scheme) -> Page:
    context = await browser.new_context(viewport={"width": 420, "height": 640}, color_scheme=scheme)
    page = await context.new_page()
    await page.goto(str(stack.client.make_url("/chat")))
    await _connected(page)
    return page


async def _connected(page: Page) -> None:
    await expect(page.locator("#chat-status")).to_have_attribute(
        "data-state", "connected", timeout=WAIT_MS
    )


async def _assert_sources_shown(reply: Locator) -> None:
    await expect(reply.locator(".msg__text")).to_have_text(REPLY, timeout=WAIT_MS)
    sources = reply.locator(".msg__sources")
    await expect(sources.locator(".msg__sources-title")).to_have_text("Sources")
    entries = sources.get_by_role("listitem")
    await expect(entries).to_have_text([f"[1]{RETURNS}", f"[2]{SHIPPING}"])

    link = sources.get_by_role("link")
    await expect(link).to_have_count(1)  # the shipping document has no URL: its title alone
    await expect(link).to_have_text(RETURNS)
    await expect(link).to_have_attribute("href", RETURNS_URL)
    await expect(link).to_have_attribute("target", "_blank")
    await expect(link).to_have_attribute("rel", "noopener noreferrer")
    await expect(entries.nth(1).locator(".msg__source-title")).to_have_text(SHIPPING)
    assert await sources.locator("b").count() == 0  # the title's markup stayed text
    await expect(link).to_be_visible()


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_a_reply_shows_the_documents_it_cites_as_links_in_its_bubble(
    browser: Browser, stack: Stack, scheme: Scheme
) -> None:
    page = await _open(browser, stack, scheme)
    await page.get_by_label("Your message").fill("How do returns and shipping work?")
    await page.get_by_role("button", name="Send").click()
    reply = page.locator(".msg--bot")
    await expect(reply).to_have_count(1, timeout=WAIT_MS)
    await _assert_sources_shown(reply)
    await screenshot(page, f"chat-widget-citations-{scheme}.png")

    # After a reload the backlog's stored reply brings its sources back.
    await page.reload()
    await _connected(page)
    await expect(page.locator(".msg")).to_have_count(2, timeout=WAIT_MS)
    await _assert_sources_shown(page.locator(".msg--bot"))
    await page.context.close()

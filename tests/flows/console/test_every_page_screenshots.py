"""Every console page in Chromium at 1366×768 and at 390×844, over a WhatsApp, a Telegram and
two web chat conversations (one with a visitor id of about a hundred characters): each page
loads with its heading, nothing scrolls sideways, and a full-page screenshot of each is kept as
`tests/artifacts/page-<name>-<width>.png` for a person to look at."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

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
OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"
SIZES = [(1366, 768), (390, 844)]


@pytest.fixture
async def stack(tmp_path: Path, bot_api: tuple[FakeBotApi, str]) -> AsyncIterator[Stack]:
    async with inbox_stack(tmp_path, bot_api[1]) as running:
        yield running


async def _json(stack: Stack, path: str) -> Any:
    response = await stack.client.get(path, headers=AUTH)
    assert response.status == 200, await response.text()
    return await response.json()


async def _pages(stack: Stack) -> list[tuple[str, str, str]]:
    """(name, path, a selector the loaded page shows) for each console page, with the
    anonymous visitor's conversation, customer and first message as the ones opened."""
    listed = (await _json(stack, "/v1/operator/conversations"))["conversations"]
    visitor = next(c for c in listed if str(c["name"]).startswith("Web visitor"))
    opened = await _json(stack, f"/v1/operator/conversations/{visitor['id']}")
    assigned = await stack.client.post(
        f"/v1/operator/conversations/{visitor['id']}/assign",
        json={"operator": USERNAME, "reason": "asked for the same agent as last week"},
        headers=AUTH,
    )
    assert assigned.status == 200, await assigned.text()  # a line in the audit log
    document = await stack.client.post(
        "/v1/knowledge/documents",
        json={
            "content": "# Política de trocas, devoluções e reembolsos para compras no site\n\n"
            "Você tem 30 dias corridos para devolver um produto.",
            "audience": "public",
            "url": "https://help.example.com/artigos/politica-de-trocas-devolucoes-e-reembolsos-"
            "para-compras-feitas-no-site-e-no-aplicativo",
        },
        headers=AUTH,
    )
    assert document.status == 201, await document.text()  # a row on the Knowledge page
    customer = f"/console/customers/{visitor['customer_id']}"
    first_message = opened["messages"][0]["id"]
    return [
        ("conversations", "/console", "#list-pane li[data-conversation]"),
        ("conversation", f"/console/conversations/{visitor['id']}", "#thread li.message"),
        ("search", "/console?q=Ana+Souza", "ul.hits li"),
        ("customer", customer, "#identities"),
        ("message", f"{customer}/messages/{first_message}", "h1"),
        ("audit", "/console/audit", "tr[data-action]"),
        ("failed-messages", "/console/inbox", "h1"),
        ("reports", "/console/reports", "svg.report-chart"),
        ("knowledge", "/console/knowledge", "tr[data-document]"),
        ("accounts", "/console/accounts", "h1"),
        ("settings", "/console/settings", "h1"),
    ]


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_every_page_fits_the_screen_and_is_kept_as_a_screenshot(
    browser: Browser, stack: Stack, size: tuple[int, int]
) -> None:
    await seed_inbox(stack)
    width, height = size
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    await page.goto(str(stack.client.make_url("/console/login")))
    assert await page.evaluate(OVERFLOW) <= 0, "login"
    await screenshot(page, f"page-login-{width}.png")
    await page.get_by_label("Username").fill(USERNAME)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.locator("#live-status")).to_have_attribute(
        "data-state", "live", timeout=WAIT_MS
    )

    overflowing: dict[str, int] = {}
    for name, path, loaded in await _pages(stack):
        await page.goto(str(stack.client.make_url(path)))
        await expect(page.locator(loaded).first).to_be_visible(timeout=WAIT_MS)
        over = await page.evaluate(OVERFLOW)
        if over > 0:
            overflowing[name] = over
        await screenshot(page, f"page-{name}-{width}.png")
        if name == "customer":  # the context preview is asked from the customer's page
            await page.get_by_label("Sample message").fill("Quanto custa o frete?")
            await page.get_by_role("button", name="Preview context").click()
            await expect(page.locator("svg.budget")).to_be_visible(timeout=WAIT_MS)
            if (over := await page.evaluate(OVERFLOW)) > 0:
                overflowing["preview"] = over
            await screenshot(page, f"page-preview-{width}.png")
    assert overflowing == {}, f"pages wider than {width} px: {overflowing}"
    assert errors == []
    await context.close()

"""The satisfaction question in the `/chat` widget, in a real headless Chromium against a real
gateway with the offline model: after an operator hands the conversation back, the question
shows with 1-5 buttons under it; a tap sends the score, the buttons go, the thanks arrive and
the score is stored."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select

from gateway.storage.models_csat import CsatSurvey
from gateway.tenants import TenantSettings
from tests.support.app_settings import AUTH
from tests.support.browser import screenshot
from tests.support.stack import Stack, running_stack
from tests.support.tenant_settings import save_domain_settings
from tests.support.widget import VISITOR_KEY, WAIT_MS

try:
    from playwright.async_api import Browser, expect
except ImportError:  # the browser fixture skips and says why
    pass

DEFAULTS = TenantSettings()


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack("embedded", tmp_path) as running:
        await save_domain_settings(running, csat_enabled=True)
        yield running


async def _hold_and_hand_back(stack: Stack, visitor: str) -> None:
    held = await stack.client.post(
        "/v1/operator/conversations/handoff",
        json={
            "channel": "webchat",
            "external_id": f"web:anon:{visitor}",
            "reason": "order question",
            "actor": "Marta",
        },
        headers=AUTH,
    )
    assert held.status == 200, await held.text()
    conversation = (await held.json())["id"]
    back = await stack.client.post(
        f"/v1/operator/conversations/{conversation}/handback",
        json={"reason": "solved", "actor": "Marta"},
        headers=AUTH,
    )
    assert back.status == 200, await back.text()


async def test_the_widget_shows_the_score_buttons_and_a_tap_answers(
    browser: Browser, stack: Stack
) -> None:
    context = await browser.new_context(viewport={"width": 420, "height": 760})
    page = await context.new_page()
    await page.goto(str(stack.client.make_url("/chat")))
    await expect(page.locator("#chat-status")).to_have_attribute(
        "data-state", "connected", timeout=WAIT_MS
    )
    visitor = await page.evaluate(f"localStorage.getItem({json.dumps(VISITOR_KEY)})")
    assert isinstance(visitor, str)
    await page.get_by_label("Your message").fill("Where is my order 4471?")
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator(".msg--assistant")).to_have_count(1, timeout=WAIT_MS)

    await _hold_and_hand_back(stack, visitor)
    question = page.locator(".msg--operator")
    await expect(question.locator(".msg__text")).to_have_text(
        DEFAULTS.csat_question, timeout=WAIT_MS
    )
    buttons = question.locator(".msg__choice")
    await expect(buttons).to_have_text(["1", "2", "3", "4", "5"])
    await screenshot(page, "chat-widget-csat.png")

    await buttons.nth(3).click()
    await expect(page.locator(".msg__choice")).to_have_count(0)
    await expect(page.locator(".msg--assistant .msg__text").last).to_have_text(
        DEFAULTS.csat_thanks, timeout=WAIT_MS
    )
    async with stack.sessions()() as session:
        [survey] = list(await session.scalars(select(CsatSurvey)))
    assert survey.score == 4
    assert await page.evaluate("window.scrollY") == 0
    await context.close()

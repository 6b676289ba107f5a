"""The conversation page in a real headless Chromium shows WhatsApp's 24-hour window: open and
until when, then closed with the reply held outside it and its reason. Screenshot in
`tests/artifacts/conversation-window-held.png`."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from gateway.keys import DELIVER
from gateway.operators.accounts import create_operator
from gateway.runtime.clock import utcnow
from gateway.storage.models import Conversation
from tests.flows.webhooks.test_whatsapp_cloud_webhook import _sessions
from tests.support.browser import screenshot, sign_in
from tests.support.console import PASSWORD, USERNAME
from tests.support.whatsapp_stack import whatsapp_stack

# Live pages timed against a browser: alone, as the other timed tests (flaky beside a parallel run).
pytestmark = pytest.mark.serial

try:
    from playwright.async_api import expect
except ImportError:  # the browser fixture skips with the reason
    pass

NUMBER = "+5511998765432"
WAIT_MS = 10_000


async def test_the_page_shows_the_window_and_a_reply_held_outside_it(
    browser: Any, tmp_path: Path
) -> None:
    async with whatsapp_stack(tmp_path, public_url="http://relay.example.org") as gateway:
        stack, twilio = gateway.stack, gateway.twilio
        async with _sessions(stack).begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
        await gateway.say(NUMBER, "Oi, tudo bem?")
        async with _sessions(stack)() as session:
            conversation_id = await session.scalar(select(Conversation.id))

        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        await sign_in(page, str(stack.client.make_url("/console/login")), USERNAME, PASSWORD)
        await page.goto(str(stack.client.make_url(f"/console/conversations/{conversation_id}")))
        window = page.locator("#window")
        await expect(window).to_contain_text("WhatsApp window open until", timeout=WAIT_MS)

        # A reply whose first delivery failed is retried after the window closed: with no
        # template configured it is held, and the page says so and why.
        twilio.fail_next = [503] * 4
        await gateway.post(NUMBER, "Cadê meu pedido?")
        await stack.idle()
        async with _sessions(stack).begin() as session:
            await session.execute(
                update(Conversation).values(last_inbound_at=utcnow() - timedelta(hours=25))
            )
        await stack.app[DELIVER].retry_deliveries()
        await page.reload()
        await expect(window).to_contain_text("WhatsApp window closed", timeout=WAIT_MS)
        await expect(window).to_contain_text("1 held reply")
        held = page.locator("#thread .tag.delivery-held")
        await expect(held).to_have_count(1, timeout=WAIT_MS)
        await expect(page.locator("#thread")).to_contain_text("outside_window_template")
        await screenshot(page, "conversation-window-held.png")
        assert errors == []
        await context.close()

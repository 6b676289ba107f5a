"""Visual care in a real headless Chromium: the conversation page has no error box until an
action fails, then shows it with the reason and drops it once an action succeeds; the customer
profile ends with a red danger zone. Screenshots in `tests/artifacts/visual-*.png`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from gateway.operators.accounts import create_operator
from gateway.storage.models import Conversation
from gateway.storage.repositories.operators import OperatorRole
from tests.flows.webhooks.test_whatsapp_cloud_webhook import _sessions
from tests.support.browser import screenshot
from tests.support.console import PASSWORD, USERNAME
from tests.support.whatsapp_stack import whatsapp_stack

try:
    from playwright.async_api import Route, expect
except ImportError:  # the browser fixture skips with the reason
    pass

NUMBER = "+5511998765432"
WAIT_MS = 10_000
REFUSAL = "this conversation is held by another operator"


async def test_the_error_box_shows_only_with_an_error_and_the_danger_zone_is_red(
    browser: Any, tmp_path: Path
) -> None:
    async with whatsapp_stack(tmp_path, public_url="http://relay.example.org") as gateway:
        stack = gateway.stack
        async with _sessions(stack).begin() as session:
            await create_operator(session, USERNAME, PASSWORD, role=OperatorRole.ADMIN)
        await gateway.say(NUMBER, "Oi, tudo bem?")
        async with _sessions(stack)() as session:
            conversation = (await session.scalars(select(Conversation))).one()

        context = await browser.new_context(viewport={"width": 1366, "height": 768})
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        # Chromium logs the refused take-over below as a failed resource; any other is an error.
        page.on(
            "console",
            lambda msg: (
                errors.append(msg.text)
                if msg.type == "error" and "status of 409" not in msg.text
                else None
            ),
        )
        await page.goto(str(stack.client.make_url("/console/login")))
        await page.get_by_label("Username").fill(USERNAME)
        await page.get_by_label("Password").fill(PASSWORD)
        await page.get_by_role("button", name="Log in").click()

        url = str(stack.client.make_url(f"/console/conversations/{conversation.id}"))
        served = await (await page.request.get(url)).text()
        assert 'class="error"' not in served and "control-error" not in served
        await page.goto(url)
        take = page.get_by_role("button", name="Take over")
        await expect(take).to_be_visible(timeout=WAIT_MS)
        assert await page.locator("#controls .error").count() == 0

        # The server refuses the take-over: the page shows why, in the error box.
        async def refuse(route: Route) -> None:
            await route.fulfill(status=409, json={"error": "conflict", "detail": REFUSAL})

        await page.route("**/take", refuse)
        await take.click()
        box = page.locator("#controls .error[role=alert]")
        await expect(box).to_have_text(REFUSAL, timeout=WAIT_MS)
        await expect(box).to_be_visible()
        await screenshot(page, "visual-conversation-error.png")

        # The next action succeeds: the box goes away with the error.
        await page.unroute("**/take", refuse)
        await take.click()
        await expect(page.get_by_role("button", name="Hand back to the bot")).to_be_visible(
            timeout=WAIT_MS
        )
        await expect(page.locator("#control-error")).to_have_count(0)

        # The profile ends with the danger zone, its erase button red.
        await page.goto(
            str(stack.client.make_url(f"/console/customers/{conversation.customer_id}"))
        )
        zone = page.locator("section.danger-zone")
        await expect(zone).to_contain_text("Erase this customer")
        erase = zone.get_by_role("button", name="Erase this customer")
        assert await erase.evaluate("b => getComputedStyle(b).backgroundColor") == (
            "rgb(180, 35, 24)"
        )
        assert await zone.evaluate("s => getComputedStyle(s).borderTopColor") == (
            "rgb(180, 35, 24)"
        )
        harmless = page.get_by_role("button", name="Rebuild memory")
        assert await harmless.evaluate("b => getComputedStyle(b).backgroundColor") == (
            "rgb(47, 91, 211)"
        )
        await zone.scroll_into_view_if_needed()
        await screenshot(page, "visual-profile-danger-zone.png")
        # The favicon the pages link is served (a missing one would be a console error).
        icon = await page.request.get(str(stack.client.make_url("/console/static/favicon.svg")))
        assert icon.status == 200 and icon.headers["content-type"] == "image/svg+xml"
        assert errors == [], errors
        await context.close()

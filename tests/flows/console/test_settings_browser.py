"""The Settings page in a real headless Chromium (Debian `chromium`, driven by Playwright)
against a real gateway: an admin opens a host's level from the menu, edits a setting, reviews
the change and saves it; an agent finds no Settings in the menu and is refused the page.
Screenshots are kept in `tests/artifacts/console-settings*.png`."""

from __future__ import annotations

from gateway.operators.accounts import create_operator
from gateway.storage.repositories import audit, tenants
from gateway.storage.repositories.operators import OperatorRole
from tests.support.browser import screenshot
from tests.support.console import PASSWORD, USERNAME
from tests.support.stack import Stack

try:
    from playwright.async_api import Browser, Page, expect
except ImportError:  # the browser fixture skips with the reason
    pass

HOST = "shop.example.com"
AGENT = "ben.agent"
AGENT_PASSWORD = "agent horse battery"
HANDOFF = "Um colega da loja já vem falar com você."


async def _log_in(page: Page, base: str, username: str, password: str) -> None:
    await page.goto(f"{base}/login")
    await page.get_by_label("Username").fill(username)
    await page.get_by_label("Password").fill(password)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_text(f"signed in as {username}")).to_be_visible()


async def test_an_admin_edits_a_setting_and_an_agent_is_refused(
    browser: Browser, stack: Stack
) -> None:
    async with stack.sessions().begin() as session:
        await create_operator(session, AGENT, AGENT_PASSWORD, role=OperatorRole.AGENT)
    base = str(stack.client.make_url("/console"))
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    await _log_in(page, base, USERNAME, PASSWORD)
    await page.get_by_role("link", name="Settings").click()
    await expect(page.locator("h1")).to_have_text("Settings")
    await page.get_by_label("Host", exact=True).fill(HOST)
    await page.get_by_role("button", name="Open level").click()
    await expect(page.locator("#level-path")).to_have_text(f"domain/default/host/{HOST}")

    # The browser holds a value the schema refuses (below the window's minimum).
    window = page.locator("#setting-window")
    await window.fill("100")
    await page.get_by_role("button", name="Review changes").click()
    assert not await window.evaluate("field => field.validity.valid")
    await expect(page.locator("h1")).to_have_text("Settings")
    await window.fill("")

    await page.locator("#setting-handoff_message").fill(HANDOFF)
    await screenshot(page, "console-settings.png")
    await page.get_by_role("button", name="Review changes").click()
    await expect(page.locator("h1")).to_have_text("Review the change")
    row = page.locator('tr[data-key="handoff_message"]')
    await expect(row.locator("td").nth(1)).to_have_text("not set")
    await expect(row.locator("td").nth(2)).to_contain_text(HANDOFF)
    await screenshot(page, "console-settings-review.png")
    await page.get_by_label("Reason").fill("the shop's own words")
    await page.get_by_role("button", name="Save").click()
    await expect(page.locator(".notice")).to_contain_text("saved: handoff_message")
    await expect(page.locator("#setting-handoff_message")).to_have_value(HANDOFF)

    async with stack.sessions()() as session:
        stored = await tenants.stored_level(session, domain="default", host=HOST)
        [entry] = await audit.list_audit(session, action="settings_changed")
    assert stored == {"handoff_message": HANDOFF}
    assert (entry.actor, entry.reason) == (USERNAME, "the shop's own words")
    assert errors == []
    await context.close()

    agent_context = await browser.new_context(viewport={"width": 1280, "height": 900})
    agent = await agent_context.new_page()
    await _log_in(agent, base, AGENT, AGENT_PASSWORD)
    await expect(agent.get_by_role("link", name="Settings")).to_have_count(0)
    response = await agent.goto(f"{base}/settings?host={HOST}")
    assert response is not None and response.status == 403
    await expect(agent.locator("#setting-handoff_message")).to_have_count(0)
    await screenshot(agent, "console-settings-agent.png")
    await agent_context.close()

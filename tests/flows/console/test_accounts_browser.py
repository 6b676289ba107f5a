"""The Accounts page in a real headless Chromium (Debian `chromium`, driven by Playwright)
against a real gateway, as an admin: reach it from the menu, disable and enable an agent,
reset its password (shown once, and it logs in with it), remove it. Screenshots are kept in
`tests/artifacts/console-accounts*.png`."""

from __future__ import annotations

from gateway.operators.accounts import create_operator
from tests.support.browser import screenshot
from tests.support.console import PASSWORD, USERNAME, post_login
from tests.support.stack import Stack

try:
    from playwright.async_api import Browser, expect
except ImportError:  # the browser fixture skips with the reason
    pass

AGENT = "ben.agent"
AGENT_PASSWORD = "agent horse battery"


async def test_an_admin_manages_an_account_from_the_accounts_page(
    browser: Browser, stack: Stack
) -> None:
    async with stack.sessions().begin() as session:
        await create_operator(session, AGENT, AGENT_PASSWORD)
    base = str(stack.client.make_url("/console"))
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    await page.goto(f"{base}/login")
    await page.get_by_label("Username").fill(USERNAME)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_text(f"signed in as {USERNAME}")).to_be_visible()
    await page.get_by_role("link", name="Accounts").click()
    await expect(page.locator("h1")).to_have_text("Operator accounts")

    me = page.locator(f'tr[data-account="{USERNAME}"]')
    await expect(me.locator("td").nth(1)).to_have_text("admin")
    await expect(me.get_by_role("button")).to_have_count(0)  # no action on oneself
    agent = page.locator(f'tr[data-account="{AGENT}"]')
    await expect(agent.locator("td").nth(1)).to_have_text("agent")
    await expect(agent.locator("td").nth(2)).to_have_text("active")
    await screenshot(page, "console-accounts.png")

    await agent.get_by_role("button", name="Disable").click()
    await expect(page.locator(".notice")).to_contain_text(f"operator {AGENT} disabled")
    await expect(agent.locator("td").nth(2)).to_contain_text("disabled since")
    assert (await post_login(stack.client, AGENT, AGENT_PASSWORD)).status == 401

    await agent.get_by_role("button", name="Enable").click()
    await expect(page.locator(".notice")).to_contain_text(f"operator {AGENT} enabled")
    await expect(agent.locator("td").nth(2)).to_have_text("active")

    await agent.get_by_role("button", name="Reset password").click()
    shown = page.locator(f'code[data-new-password="{AGENT}"]')
    await expect(shown).to_have_count(1)
    new_password = await shown.inner_text()
    await screenshot(page, "console-accounts-password.png")
    assert (await post_login(stack.client, AGENT, AGENT_PASSWORD)).status == 401
    assert (await post_login(stack.client, AGENT, new_password)).status == 303

    await agent.get_by_label("Type the username to remove").fill(AGENT)
    await agent.get_by_role("button", name="Remove").click()
    await expect(page.locator(".notice")).to_contain_text(f"operator {AGENT} removed")
    await expect(page.locator(f'tr[data-account="{AGENT}"]')).to_have_count(0)
    assert errors == []
    await context.close()

"""The live conversations pages in a real headless Chromium against a real gateway: an operator
sees a new web chat conversation appear without reloading, takes it over, replies, and the
visitor's widget shows the reply; a visitor asking for a person appears under waiting.
Screenshots are kept in `tests/artifacts/conversations-*.png`."""

from __future__ import annotations

from tests.support.browser import screenshot
from tests.support.console import PASSWORD, USERNAME
from tests.support.stack import Stack

try:
    from playwright.async_api import Browser, BrowserContext, Page, expect
except ImportError:  # the skip below says why
    pass

WAIT_MS = 10_000


async def _visitor_page(context: BrowserContext, stack: Stack) -> Page:
    page = await context.new_page()
    await page.goto(str(stack.client.make_url("/chat")))
    await expect(page.locator("#chat-status")).to_have_attribute(
        "data-state", "connected", timeout=WAIT_MS
    )
    return page


async def _say(page: Page, text: str) -> None:
    await page.get_by_label("Your message").fill(text)
    await page.get_by_role("button", name="Send").click()


async def _logged_in(context: BrowserContext, stack: Stack) -> Page:
    page = await context.new_page()
    await page.goto(str(stack.client.make_url("/console/login")))
    await page.get_by_label("Username").fill(USERNAME)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.locator("#live-status")).to_have_attribute(
        "data-state", "live", timeout=WAIT_MS
    )
    return page


async def test_an_operator_sees_a_chat_arrive_takes_it_over_and_the_visitor_reads_the_reply(
    browser: Browser, stack: Stack
) -> None:
    operator_context = await browser.new_context(viewport={"width": 1280, "height": 900})
    visitor_context = await browser.new_context()
    console = await _logged_in(operator_context, stack)
    errors: list[str] = []
    console.on("pageerror", lambda error: errors.append(str(error)))
    console.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    await expect(console.locator("#bot")).to_contain_text("No conversation yet.")

    # A visitor writes: the conversation appears on the open page, no reload.
    visitor = await _visitor_page(visitor_context, stack)
    await _say(visitor, "Oi, meu pedido 4471 não chegou")
    await expect(visitor.locator(".msg--assistant")).to_have_count(1, timeout=WAIT_MS)
    row = console.locator("#bot li[data-conversation]")
    await expect(row).to_have_count(1, timeout=WAIT_MS)
    await expect(row).to_contain_text("webchat")
    await screenshot(console, "conversations-list.png")

    # The operator opens it, takes it over and answers.
    await row.locator("a").first.click()
    await expect(console.locator("#thread li.message")).to_have_count(2, timeout=WAIT_MS)
    await expect(console.locator("#thread")).to_contain_text("meu pedido 4471")
    await console.get_by_role("button", name="Take over").click()
    await expect(console.locator("#owner")).to_contain_text(f"Held by {USERNAME}", timeout=WAIT_MS)
    await console.get_by_label("Reply to the customer").fill("Olá, aqui é a Ana. Vou verificar.")
    await console.get_by_role("button", name="Send").click()

    # The visitor's widget shows the operator's reply; the bot says nothing more.
    assistant = visitor.locator(".msg--assistant .msg__text")
    await expect(assistant).to_have_count(2, timeout=WAIT_MS)
    await expect(assistant.nth(1)).to_have_text("Olá, aqui é a Ana. Vou verificar.")
    await expect(console.locator("#thread li.operator")).to_have_count(1, timeout=WAIT_MS)
    await _say(visitor, "Obrigada!")
    await expect(console.locator("#thread li.message")).to_have_count(4, timeout=WAIT_MS)
    await stack.idle()
    assert await visitor.locator(".msg--assistant").count() == 2
    await screenshot(console, "conversations-held.png")

    # Back on the list: a second visitor asks for a person and shows up under waiting.
    await console.goto(str(stack.client.make_url("/console")))
    await expect(console.locator("#human li[data-conversation]")).to_have_count(1, timeout=WAIT_MS)
    second_context = await browser.new_context()
    second = await _visitor_page(second_context, stack)
    await _say(second, "quero falar com um atendente")
    waiting = console.locator("#waiting li[data-conversation]")
    await expect(waiting).to_have_count(1, timeout=WAIT_MS)
    await expect(waiting).to_contain_text("waiting")
    await screenshot(console, "conversations-waiting.png")

    # Handing back from the conversation page returns it to the bot.
    await console.locator("#human li[data-conversation] a").first.click()
    await console.get_by_role("button", name="Hand back to the bot").click()
    await expect(console.locator("#owner")).to_have_text("Answered by the bot", timeout=WAIT_MS)
    assert errors == []
    for context in (operator_context, visitor_context, second_context):
        await context.close()

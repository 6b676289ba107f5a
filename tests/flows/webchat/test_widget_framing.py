"""Who may hand the `/chat` widget an identity token, in a real headless Chromium against a real
gateway: only a site listed in RELAYDESK_WEBCHAT_ALLOWED_ORIGINS may frame the widget, it alone
hears that the widget is ready and its token signs the visitor in; any other site cannot frame
it, and where a browser lets it all the same its token is ignored (what the visitor types stays
the anonymous visitor's, never the framer's account); a token in the URL signs nobody in."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.support.browser import screenshot
from tests.support.stack import Stack, running_stack
from tests.support.widget import (
    VISITOR_ID_JS,
    WAIT_MS,
    Shop,
    assert_anonymous,
    assert_verified,
    identity_token,
    shop_site,
    verified_token,
)

try:
    from playwright.async_api import Browser, BrowserContext, Frame, Page, Route, expect
except ImportError:  # the browser fixture skips with the reason
    pass


@pytest.fixture
async def shops() -> AsyncIterator[tuple[Shop, Shop]]:
    """Two sites on two origins: the customer's shop, listed, and another one, not listed."""
    async with shop_site() as listed, shop_site() as unlisted:
        yield listed, unlisted


@pytest.fixture
async def stack(tmp_path: Path, shops: tuple[Shop, Shop]) -> AsyncIterator[Stack]:
    listed, _ = shops
    origins = f"https://www.example.com, {listed.origin}"  # the customer's other site first
    async with running_stack(
        "embedded", tmp_path, RELAYDESK_WEBCHAT_ALLOWED_ORIGINS=origins
    ) as running:
        yield running


@pytest.fixture
async def unlisting_stack(tmp_path: Path) -> AsyncIterator[Stack]:
    """The default: no site listed."""
    async with running_stack("embedded", tmp_path) as running:
        yield running


def _gateway_origin(stack: Stack) -> str:
    return str(stack.client.make_url("/").origin())


def _framing_page(stack: Stack, token: str) -> str:
    """A page that frames the widget and hands it `token`: when the widget says it is ready,
    and (as a hostile framer would, without waiting to be told) as soon as the frame loads.
    `window.received` keeps what the widget posted to it."""
    identity = json.dumps({"type": "relaydesk:identity", "token": token})
    return f"""<!doctype html><title>Shop</title>
<iframe id="chat" src="{stack.client.make_url("/chat")}" width="400" height="600"></iframe>
<script>
window.received = [];
const chat = document.getElementById("chat");
window.addEventListener("message", (event) => {{
  if (event.source !== chat.contentWindow) return;
  window.received.push(event.data && event.data.type);
  if (event.data && event.data.type === "relaydesk:ready") {{
    chat.contentWindow.postMessage({identity}, {json.dumps(_gateway_origin(stack))});
  }}
}});
chat.addEventListener("load", () => chat.contentWindow.postMessage({identity}, "*"));
</script>"""


@asynccontextmanager
async def _new_context(browser: Browser) -> AsyncIterator[BrowserContext]:
    context = await browser.new_context(viewport={"width": 640, "height": 680})
    try:
        yield context
    finally:
        await context.close()


async def _widget_frame(page: Page) -> Frame:
    handle = await page.locator("#chat").element_handle()
    frame = await handle.content_frame() if handle is not None else None
    assert frame is not None
    return frame


async def _talk(stack: Stack, widget: Frame | Page, text: str) -> str:
    """Type `text` into the connected widget, wait for the reply; the widget's visitor id."""
    await expect(widget.locator("#chat-status")).to_have_attribute(
        "data-state", "connected", timeout=WAIT_MS
    )
    await widget.get_by_label("Your message").fill(text)
    await widget.get_by_role("button", name="Send").click()
    await stack.idle()
    await expect(widget.locator(".msg--assistant")).to_have_count(1, timeout=WAIT_MS)
    visitor = await widget.evaluate(VISITOR_ID_JS)
    assert isinstance(visitor, str) and visitor
    return visitor


async def _assert_refused_frame(page: Page, shop: Shop, stack: Stack) -> None:
    """Opening `shop` logs the browser's refusal to frame the widget, whose page never loads."""
    async with page.expect_console_message(
        lambda message: "frame-ancestors" in message.text, timeout=WAIT_MS
    ) as refusal:
        await page.goto(shop.url)
    assert _gateway_origin(stack) in (await refusal.value).text
    frame = await _widget_frame(page)
    assert frame.url.startswith("chrome-error://")  # Chromium's page for a blocked frame
    assert await frame.locator("#chat-form").count() == 0
    await asyncio.sleep(0.3)
    assert await page.evaluate("window.received") == []


async def test_a_listed_site_signs_the_visitor_in_and_an_unlisted_one_cannot_frame_the_widget(
    browser: Browser, shops: tuple[Shop, Shop], stack: Stack
) -> None:
    listed, unlisted = shops
    account = "acct-" + uuid.uuid4().hex[:10]
    listed.html = unlisted.html = _framing_page(stack, verified_token(account))

    async with _new_context(browser) as context:
        page = await context.new_page()
        await page.goto(listed.url)
        frame = await _widget_frame(page)
        await expect(frame.locator("body")).to_have_attribute(
            "data-identity", "token", timeout=WAIT_MS
        )
        visitor = await _talk(stack, frame, "Signed in from the shop")
        # Told once: the post addressed to the other listed site's origin is not delivered.
        assert await page.evaluate("window.received") == ["relaydesk:ready"]
        await assert_verified(stack, visitor, account)
        await screenshot(page, "chat-widget-framed-listed.png")

    async with _new_context(browser) as context:
        page = await context.new_page()
        await _assert_refused_frame(page, unlisted, stack)
        await screenshot(page, "chat-widget-framed-unlisted.png")


async def test_with_no_site_listed_no_other_site_may_frame_the_widget(
    browser: Browser, shops: tuple[Shop, Shop], unlisting_stack: Stack
) -> None:
    listed, _ = shops  # listed nowhere: the gateway runs with the default
    listed.html = _framing_page(unlisting_stack, verified_token("acct-" + uuid.uuid4().hex[:10]))
    async with _new_context(browser) as context:
        page = await context.new_page()
        await _assert_refused_frame(page, listed, unlisting_stack)
    response = await unlisting_stack.client.get("/chat")
    assert "frame-ancestors 'self';" in response.headers["Content-Security-Policy"]


async def _strip_content_security_policy(route: Route) -> None:
    response = await route.fetch()
    headers = {
        name: value
        for name, value in response.headers.items()
        if name.lower() != "content-security-policy"
    }
    await route.fulfill(response=response, headers=headers)


async def test_an_unlisted_framers_token_is_ignored_where_framing_is_not_blocked(
    browser: Browser, shops: tuple[Shop, Shop], stack: Stack
) -> None:
    """A browser that does not enforce `frame-ancestors` (an old one, or the header lost on the
    way) lets another site frame the widget: the widget itself still refuses its token, and
    tells it nothing."""
    _, unlisted = shops
    account = "acct-" + uuid.uuid4().hex[:10]
    unlisted.html = _framing_page(stack, verified_token(account))
    async with _new_context(browser) as context:
        await context.route("**/chat", _strip_content_security_policy)
        # A page the test served itself has no network address, so Chromium takes the widget
        # for a public page reaching a loopback gateway; the permission lets it connect.
        await context.grant_permissions(["local-network-access"])
        page = await context.new_page()
        await page.goto(unlisted.url)
        frame = await _widget_frame(page)
        visitor = await _talk(stack, frame, "My card ends in 4471")
        assert await frame.locator("body").get_attribute("data-identity") == "anonymous"
        assert await page.evaluate("window.received") == []
        await assert_anonymous(stack, visitor, account)
        await screenshot(page, "chat-widget-framed-unenforced.png")


async def test_a_token_in_the_url_signs_nobody_in(browser: Browser, stack: Stack) -> None:
    account = "acct-" + uuid.uuid4().hex[:10]
    async with _new_context(browser) as context:
        page = await context.new_page()
        await page.goto(
            str(stack.client.make_url("/chat").with_query(token=verified_token(account)))
        )
        visitor = await _talk(stack, page, "It's me")
        await expect(page.locator("body")).to_have_attribute("data-identity", "anonymous")
        await assert_anonymous(stack, visitor, account)


async def test_another_accounts_token_starts_a_thread_of_its_own(
    browser: Browser, shops: tuple[Shop, Shop], stack: Stack
) -> None:
    """The shop signs another account in (its token posted to the widget): the widget may not
    reopen the first account's thread, so it clears the page and starts a new one."""
    listed, _ = shops
    listed.html = _framing_page(stack, identity_token("acct-" + uuid.uuid4().hex[:10]))
    second = identity_token("acct-" + uuid.uuid4().hex[:10])
    async with _new_context(browser) as context:
        page = await context.new_page()
        await page.goto(listed.url)
        frame = await _widget_frame(page)
        await expect(frame.locator("body")).to_have_attribute(
            "data-identity", "token", timeout=WAIT_MS
        )
        first_visitor = await _talk(stack, frame, "My card ends in 4471")

        await page.evaluate(
            """([token, origin]) => document.getElementById("chat").contentWindow.postMessage(
                 {type: "relaydesk:identity", token}, origin)""",
            [second, _gateway_origin(stack)],
        )
        await expect(frame.locator(".msg")).to_have_count(0, timeout=WAIT_MS)
        await expect(frame.locator("#chat-status")).to_have_attribute(
            "data-state", "connected", timeout=WAIT_MS
        )
        assert await frame.evaluate(VISITOR_ID_JS) not in (first_visitor, "", None)

"""The `/chat` widget in a real headless Chromium (Debian `chromium`, driven by Playwright)
against a real gateway on a real socket with the offline model: it talks, survives a dropped
websocket and a lost ack without losing or duplicating a message, keeps its visitor id and
history across a reload, carries an identity token set by a page of the gateway's origin, and
shows a reply being written (typing indicator, growing bubble) until the stored reply takes its
place. Tokens from framing sites: test_widget_framing.py."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from channels.base import Media, OutboundMessage
from gateway.keys import ADAPTERS, HUB
from tests.support.browser import screenshot
from tests.support.stack import Stack, running_stack
from tests.support.widget import (
    VISITOR_KEY,
    WAIT_MS,
    assert_verified,
    identity_token,
    user_rows,
)

try:
    from playwright.async_api import (
        Browser,
        BrowserContext,
        Page,
        WebSocketRoute,
        expect,
    )
except ImportError:  # the skip below says why
    pass

OUTBOX_KEY = "relaydesk.outbox"
OFFLINE_REPLY = "offline mode"
FIRST = "<b>First</b> question <img src=x onerror=alert(1)>"


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack("embedded", tmp_path) as running:
        yield running


def _url(stack: Stack, path: str = "/chat") -> str:
    return str(stack.client.make_url(path))


async def _open(context: BrowserContext, url: str) -> Page:
    page = await context.new_page()
    await page.goto(url)
    await _connected(page)
    return page


async def _connected(page: Page) -> None:
    await expect(page.locator("#chat-status")).to_have_attribute(
        "data-state", "connected", timeout=WAIT_MS
    )


async def _send(page: Page, text: str) -> None:
    await page.get_by_label("Your message").fill(text)
    await page.get_by_role("button", name="Send").click()


async def _visitor(page: Page) -> str:
    value = await page.evaluate(f"localStorage.getItem({json.dumps(VISITOR_KEY)})")
    assert isinstance(value, str)
    return value


async def _outbox(page: Page) -> list[dict[str, Any]]:
    raw = await page.evaluate(f"localStorage.getItem({json.dumps(OUTBOX_KEY)})")
    items: list[dict[str, Any]] = json.loads(raw or "[]")
    return items


async def _bubbles(page: Page, role: str) -> list[str]:
    texts: list[str] = await page.locator(f".msg--{role} .msg__text").all_text_contents()
    return texts


async def _stored(stack: Stack, visitor: str) -> list[tuple[str, str]]:
    response = await stack.client.get("/webchat/messages", params={"visitor_id": visitor})
    assert response.status == 200
    return [(m["role"], m["text"]) for m in (await response.json())["messages"]]


async def _settled(stack: Stack, page: Page, users: int, assistants: int) -> None:
    """Every accepted message answered, and the page shows exactly this many bubbles."""
    await stack.idle()
    await expect(page.locator(".msg--user")).to_have_count(users, timeout=WAIT_MS)
    await expect(page.locator(".msg--assistant")).to_have_count(assistants, timeout=WAIT_MS)
    await expect(page.locator('.msg--user[data-status="sent"]')).to_have_count(
        users, timeout=WAIT_MS
    )
    # Nothing more arrives late (a duplicate would show up here).
    await asyncio.sleep(0.3)
    assert await page.locator(".msg--user").count() == users
    assert await page.locator(".msg--assistant").count() == assistants
    ids = await page.locator(".msg").evaluate_all("items => items.map(i => i.dataset.messageId)")
    assert all(ids) and len(set(ids)) == len(ids)
    assert ids == sorted(ids, key=int)


async def _signed_in_page(context: BrowserContext, token: str) -> Page:
    """A page that sets `window.RelaydeskChat` before the widget's script runs, as a page of the
    gateway's origin that includes the script does."""
    page = await context.new_page()
    config = json.dumps({"identityToken": token})
    await page.add_init_script(f"window.RelaydeskChat = {config};")
    return page


async def test_page_and_assets_are_served_with_their_headers(stack: Stack) -> None:
    page = await stack.client.get("/chat")
    assert page.status == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert page.headers["Cache-Control"] == "no-cache"
    policy = page.headers["Content-Security-Policy"]
    host = stack.client.make_url("/").host
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert f"connect-src 'self' ws://{host}:" in policy
    assert "unsafe" not in policy and "http" not in policy
    assert "frame-ancestors 'self';" in policy  # no other site listed: none may frame it
    html = await page.text()
    assert 'src="/chat/static/chat.js"' in html and "://" not in html  # nothing third-party
    assert '<meta name="relaydesk-allowed-origins" content="">' in html
    etag = page.headers["ETag"]
    again = await stack.client.get("/chat", headers={"If-None-Match": etag})
    assert again.status == 304 and again.headers["ETag"] == etag
    assert "frame-ancestors 'self';" in again.headers["Content-Security-Policy"]
    script = await stack.client.get("/chat/static/chat.js")
    assert script.status == 200 and script.headers["Content-Type"].startswith("text/javascript")
    style = await stack.client.get("/chat/static/chat.css")
    assert style.status == 200 and style.headers["Content-Type"].startswith("text/css")
    for missing in ("/chat/static/nope.js", "/chat/static/chat.html", "/chat/static/..%2Fapp.py"):
        response = await stack.client.get(missing)
        assert response.status == 404, missing


async def test_talks_and_survives_a_dropped_websocket(browser: Browser, stack: Stack) -> None:
    context = await browser.new_context(viewport={"width": 420, "height": 760})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(_url(stack))
    await _connected(page)
    visitor = await _visitor(page)
    assert len(visitor) >= 16

    await _send(page, "Where is my order 4471?")
    await expect(page.locator(".msg--user .msg__text")).to_have_text(["Where is my order 4471?"])
    await expect(page.locator(".msg--assistant")).to_have_count(1, timeout=WAIT_MS)
    await expect(page.locator(".msg--assistant").first).to_contain_text(OFFLINE_REPLY)
    await expect(page.locator(".msg--assistant").first).to_contain_text("Where is my order 4471?")

    # The network goes away and the server drops the socket: the widget notices, keeps
    # retrying, and queues what the visitor writes meanwhile.
    await context.set_offline(True)
    await stack.app[HUB].close_all()
    await expect(page.locator("#chat-status")).to_have_attribute("data-state", "reconnecting")
    await _send(page, "Are you still there?")
    queued = page.locator(".msg--user").nth(1)
    await expect(queued).to_have_attribute("data-status", "sending")
    await expect(page.locator("#chat-status")).to_contain_text("1 message waiting")
    assert [entry["text"] for entry in await _outbox(page)] == ["Are you still there?"]
    await asyncio.sleep(0.6)  # a few failed reconnect attempts
    await screenshot(page, "chat-widget-offline.png")
    assert [role for role, _ in await _stored(stack, visitor)] == ["user", "assistant"]

    await context.set_offline(False)
    await _connected(page)
    await _settled(stack, page, users=2, assistants=2)
    assert await _bubbles(page, "user") == ["Where is my order 4471?", "Are you still there?"]
    assert "Are you still there?" in (await _bubbles(page, "assistant"))[1]
    assert await _outbox(page) == []
    stored = await _stored(stack, visitor)
    assert [role for role, _ in stored] == ["user", "assistant", "user", "assistant"]
    assert [text for role, text in stored if role == "user"] == [
        "Where is my order 4471?",
        "Are you still there?",
    ]
    assert errors == []
    await screenshot(page, "chat-widget.png")
    await context.close()


async def test_a_lost_ack_is_resent_and_stored_once(browser: Browser, stack: Stack) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    frames_to_server: list[dict[str, Any]] = []
    acks: list[dict[str, Any]] = []
    drop_next_ack = True

    async def relay(page_side: WebSocketRoute) -> None:
        server = page_side.connect_to_server()

        def to_server(message: str | bytes) -> None:
            frames_to_server.append(json.loads(message))
            server.send(message)

        async def to_page(message: str | bytes) -> None:
            nonlocal drop_next_ack
            frame = json.loads(message)
            if frame.get("type") == "ack":
                acks.append(frame)
            if drop_next_ack and frame.get("type") == "ack":
                # Stored, but the visitor never hears so: the connection dies first.
                drop_next_ack = False
                await page_side.close()
                return
            page_side.send(message)

        page_side.on_message(to_server)
        server.on_message(to_page)

    await page.route_web_socket("**/webchat/ws", relay)
    await page.goto(_url(stack))
    await _connected(page)
    visitor = await _visitor(page)

    await _send(page, "Can I change the delivery address?")
    await _settled(stack, page, users=1, assistants=1)
    sent = [f for f in frames_to_server if f["type"] == "message"]
    assert len(sent) == 2 and sent[0]["client_message_id"] == sent[1]["client_message_id"]
    hellos = [f for f in frames_to_server if f["type"] == "hello"]
    assert len(hellos) == 2 and hellos[0]["after"] is None
    # The server recognised the resend: same message id, flagged as a duplicate.
    assert [a["duplicate"] for a in acks] == [False, True]
    assert acks[0]["message_id"] == acks[1]["message_id"]
    assert [role for role, _ in await _stored(stack, visitor)] == ["user", "assistant"]
    await context.close()


async def test_reload_keeps_the_visitor_history_and_outbox(browser: Browser, stack: Stack) -> None:
    context = await browser.new_context()
    page = await _open(context, _url(stack))
    visitor = await _visitor(page)
    await _send(page, FIRST)
    await _settled(stack, page, users=1, assistants=1)
    # Message text is shown as text, never parsed as markup (in either direction).
    assert await page.locator(".msg img, .msg b").count() == 0
    assert (await _bubbles(page, "user")) == [FIRST]

    await page.reload()
    await _connected(page)
    assert await _visitor(page) == visitor
    await _settled(stack, page, users=1, assistants=1)

    # Written while offline, then the tab is closed: the next visit sends it, once.
    await context.set_offline(True)
    await stack.app[HUB].close_all()
    await expect(page.locator("#chat-status")).to_have_attribute("data-state", "reconnecting")
    await _send(page, "Written before closing the tab")
    await expect(page.locator(".msg--user").nth(1)).to_have_attribute("data-status", "sending")
    await page.close()
    await context.set_offline(False)

    page = await _open(context, _url(stack))
    assert await _visitor(page) == visitor
    await _settled(stack, page, users=2, assistants=2)
    assert await _bubbles(page, "user") == [FIRST, "Written before closing the tab"]
    stored = await _stored(stack, visitor)
    assert [role for role, _ in stored] == ["user", "assistant", "user", "assistant"]

    # Another browser profile is another visitor.
    other = await browser.new_context()
    stranger = await _open(other, _url(stack))
    assert await _visitor(stranger) != visitor
    assert await stranger.locator(".msg").count() == 0
    await screenshot(page, "chat-widget-reload.png")
    await other.close()
    await context.close()


async def test_a_visitor_id_the_server_did_not_issue_is_replaced(
    browser: Browser, stack: Stack
) -> None:
    forged = "0" * 32 + "_" + "0" * 64  # the shape of a signed id, not signed here
    context = await browser.new_context()
    await context.add_init_script(
        f"localStorage.setItem({json.dumps(VISITOR_KEY)}, {json.dumps(forged)})"
    )
    page = await _open(context, _url(stack))
    visitor = await _visitor(page)
    assert visitor != forged
    await _send(page, "Hello")
    await _settled(stack, page, users=1, assistants=1)
    assert [role for role, _ in await _stored(stack, visitor)] == ["user", "assistant"]
    assert await user_rows(stack, forged) == []
    await context.close()


async def test_a_signed_in_thread_is_not_shown_without_its_token(
    browser: Browser, stack: Stack
) -> None:
    """A shared computer: the next person opens the chat without the account's token and
    starts a thread of their own instead of reading the signed-in one."""
    account = "acct-" + uuid.uuid4().hex[:10]
    context = await browser.new_context()
    page = await _signed_in_page(context, identity_token(account))
    await page.goto(_url(stack))
    await _connected(page)
    signed_in = await _visitor(page)
    await _send(page, "My address is Rua A, 10")
    await _settled(stack, page, users=1, assistants=1)
    await page.close()

    page = await _open(context, _url(stack))
    assert await _visitor(page) != signed_in
    await asyncio.sleep(0.3)
    assert await page.locator(".msg").count() == 0
    await _send(page, "Hi")
    await _settled(stack, page, users=1, assistants=1)
    assert "Rua A" not in " ".join(await _bubbles(page, "user"))
    await context.close()


async def test_identity_token_from_the_page_reaches_the_server(
    browser: Browser, stack: Stack
) -> None:
    account = "acct-" + uuid.uuid4().hex[:10]
    token = identity_token(account, phone_number="+55 11 99876-5432", phone_number_verified=True)
    context = await browser.new_context()
    page = await _signed_in_page(context, token)
    await page.goto(_url(stack))
    await _connected(page)
    await expect(page.locator("body")).to_have_attribute("data-identity", "token")
    visitor = await _visitor(page)
    await _send(page, "It's me")
    await _settled(stack, page, users=1, assistants=1)
    await assert_verified(stack, visitor, account)
    await context.close()


async def test_typing_and_a_growing_reply_become_the_stored_reply(
    browser: Browser, stack: Stack
) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.clock.install()  # time runs, and the test can jump past the typing timeout
    await page.goto(_url(stack))
    await _connected(page)
    visitor = await _visitor(page)
    await _send(page, "Where is my order 4471?")
    await _settled(stack, page, users=1, assistants=1)
    stored = await _stored(stack, visitor)
    webchat = stack.app[ADAPTERS]["webchat"]
    typing = page.locator("#chat-typing")
    partial = page.locator(".msg--partial")
    assistants = page.locator(".msg--assistant")
    await expect(typing).to_be_hidden()

    # A reply being written: the indicator, then a bubble that grows (and shrinks once, a
    # retried model call), then the stored reply in its place.
    reply_to = f"{visitor}:c-second"
    await webchat.typing(visitor, reply_to)
    await expect(typing).to_be_visible(timeout=WAIT_MS)
    await screenshot(page, "chat-widget-typing.png")
    await webchat.preview(visitor, reply_to, "Your order")
    await expect(partial.locator(".msg__text")).to_have_text("Your order", timeout=WAIT_MS)
    await expect(typing).to_be_hidden()  # the growing bubble says it now
    await webchat.preview(visitor, reply_to, "Your order 4471 left the warehouse")
    await expect(partial.locator(".msg__text")).to_have_text("Your order 4471 left the warehouse")
    await screenshot(page, "chat-widget-partial.png")
    await webchat.preview(visitor, reply_to, "Your order 44")
    await expect(partial.locator(".msg__text")).to_have_text("Your order 44")
    await webchat.typing(visitor, reply_to)  # renewed while writing: the bubble is enough
    await expect(assistants).to_have_count(2)
    final_id = str(
        10_000 + int(await page.locator(".msg").last.get_attribute("data-message-id") or 0)
    )
    final_text = "Your order 4471 left the warehouse today."
    await webchat.send(OutboundMessage("webchat", visitor, final_text, reply_to, final_id))
    await expect(partial).to_have_count(0, timeout=WAIT_MS)
    await expect(assistants).to_have_count(2)
    await expect(assistants.last.locator(".msg__text")).to_have_text(final_text)
    await expect(assistants.last).to_have_attribute("data-message-id", final_id)
    await expect(typing).to_be_hidden()

    # Late frames of a reply already shown change nothing; a typing frame for another message
    # shows the indicator, which goes away after some seconds without a new one.
    await webchat.typing(visitor, reply_to)
    await webchat.preview(visitor, reply_to, "late")
    await webchat.typing(visitor, f"{visitor}:c-third")
    await expect(typing).to_be_visible(timeout=WAIT_MS)
    assert await partial.count() == 0 and await assistants.count() == 2
    await page.clock.fast_forward(5_000)
    await expect(typing).to_be_visible()
    await page.clock.fast_forward(3_500)
    await expect(typing).to_be_hidden()

    # The indicator goes as soon as the reply arrives.
    fourth = f"{visitor}:c-fourth"
    await webchat.typing(visitor, fourth)
    await expect(typing).to_be_visible(timeout=WAIT_MS)
    await webchat.send(
        OutboundMessage("webchat", visitor, "Anything else?", fourth, final_id + "1")
    )
    await expect(assistants).to_have_count(3, timeout=WAIT_MS)
    await expect(typing).to_be_hidden()

    # A reconnect drops what was only being written (the backlog brings what was stored).
    await webchat.preview(visitor, f"{visitor}:c-fifth", "Half a rep")
    await expect(partial).to_have_count(1, timeout=WAIT_MS)
    await stack.app[HUB].close_all()
    await expect(partial).to_have_count(0, timeout=WAIT_MS)
    await _connected(page)
    assert await assistants.count() == 3

    # Nothing partial was ever stored or is served by the REST fallback.
    assert await _stored(stack, visitor) == stored
    assert [role for role, _ in stored] == ["user", "assistant"]
    assert errors == []
    await context.close()


async def test_a_reply_shows_its_attachments_as_links(browser: Browser, stack: Stack) -> None:
    context = await browser.new_context()
    page = await _open(context, _url(stack))
    visitor = await _visitor(page)
    webchat = stack.app[ADAPTERS]["webchat"]
    media = (
        Media("https://cdn.example.org/catalogo.pdf", "application/pdf", caption="Catálogo"),
        Media("https://cdn.example.org/fotos/tenis-azul.jpg"),
        Media("javascript:alert(1)", caption="<b>not a link</b>"),
    )
    await webchat.send(
        OutboundMessage("webchat", visitor, "Seguem os arquivos.", None, "900", media)
    )
    bubble = page.locator(".msg--assistant").last
    await expect(bubble.locator(".msg__text")).to_have_text("Seguem os arquivos.", timeout=WAIT_MS)
    links = bubble.locator("a.msg__attachment")
    await expect(links).to_have_count(2)
    assert await links.all_text_contents() == ["Catálogo", "tenis-azul.jpg"]
    assert [await link.get_attribute("href") for link in await links.all()] == [
        "https://cdn.example.org/catalogo.pdf",
        "https://cdn.example.org/fotos/tenis-azul.jpg",
    ]
    assert await links.first.get_attribute("rel") == "noopener noreferrer"
    await screenshot(page, "chat-widget-attachments.png")
    await context.close()

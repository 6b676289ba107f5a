"""The conversation page's reply box in a real headless Chromium: an internal note is shown in
the thread to operators, never reaches the customer (the local Twilio) nor the model's next
window (the local OpenAI-compatible server), and goes with the customer when erased; Enter
sends. Screenshots at 1366×768 and 390×844 in `tests/artifacts/reply-box-note-*.png`."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update

from gateway.operators.accounts import create_operator
from gateway.runtime.clock import utcnow
from gateway.storage.models import Conversation
from gateway.storage.models_notes import ConversationNote
from gateway.storage.records import NewFact
from gateway.storage.repositories import facts
from tests.flows.webhooks.test_whatsapp_cloud_webhook import _sessions
from tests.support.browser import screenshot, sign_in
from tests.support.console import AUTH, PASSWORD, USERNAME
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.whatsapp_stack import until, whatsapp_stack

# Live pages timed against a browser: alone, as the other timed tests (flaky beside a parallel run).
pytestmark = pytest.mark.serial

try:
    from playwright.async_api import expect
except ImportError:  # the browser fixture skips with the reason
    pass

NUMBER = "+5511991234567"
RECEIPT = "https://cdn.example.org/recibos/8812.pdf"
NOTE = "VIP: confirmar estorno 8812 antes de responder"
WAIT_MS = 10_000


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
async def test_a_note_stays_with_the_operators(
    browser: Any, tmp_path: Path, width: int, height: int
) -> None:
    model = FakeOpenAI()
    async with (
        model.serving() as base_url,
        whatsapp_stack(
            tmp_path, public_url="http://relay.example.org", **model_settings(base_url)
        ) as gateway,
    ):
        stack, twilio = gateway.stack, gateway.twilio
        async with _sessions(stack).begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
        await gateway.say(NUMBER, "Oi, quero um estorno")
        async with _sessions(stack)() as session:
            conversation_id = await session.scalar(select(Conversation.id))
            customer_id = await session.scalar(select(Conversation.customer_id))

        context = await browser.new_context(viewport={"width": width, "height": height})
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        await sign_in(page, str(stack.client.make_url("/console/login")), USERNAME, PASSWORD)
        await page.goto(str(stack.client.make_url(f"/console/conversations/{conversation_id}")))
        await expect(page.locator("#thread li.message")).to_have_count(2, timeout=WAIT_MS)

        # Not held: only a note may be written (a reply needs the conversation).
        await expect(page.locator("#mode-reply")).to_be_disabled(timeout=WAIT_MS)
        await expect(page.locator("#mode-note")).to_be_checked()
        field = page.get_by_label("Internal note")
        await field.fill(NOTE)
        await field.press("Enter")  # Enter sends
        note = page.locator("#thread li.note")
        await expect(note).to_have_count(1, timeout=WAIT_MS)
        await expect(note).to_contain_text(NOTE)
        await expect(note).to_contain_text(f"note · {USERNAME}")
        await expect(field).to_have_value("")
        no_overflow = "document.documentElement.scrollWidth <= innerWidth"
        assert await page.evaluate(no_overflow)
        await screenshot(page, f"reply-box-note-{width}.png")

        # Taken over: a reply goes to the customer; Shift+Enter is a new line in it.
        await page.get_by_role("button", name="Take over").click()
        await expect(page.locator("#mode-reply")).to_be_checked(timeout=WAIT_MS)
        reply = page.get_by_label("Reply to the customer")
        await reply.fill("Olá!")
        await reply.press("Shift+Enter")
        await reply.type("Vou verificar.")
        await reply.press("Enter")
        await expect(page.locator("#thread li.operator")).to_have_count(1, timeout=WAIT_MS)
        await until(lambda: twilio.created[-1].get("Body") == "Olá!\nVou verificar.")
        # An attachment by URL goes with the reply.
        await page.get_by_label("Attachment URL").fill(RECEIPT)
        await reply.fill("Segue o recibo.")
        await reply.press("Enter")
        await until(lambda: twilio.created[-1].get("MediaUrl") == RECEIPT)
        assert twilio.created[-1]["Body"] == "Segue o recibo."
        await expect(page.locator("#thread a.attachment")).to_have_count(1, timeout=WAIT_MS)
        await expect(page.get_by_label("Attachment URL")).to_have_value("")
        bodies = [form.get("Body", "") for form in twilio.created]
        assert all(NOTE not in body for body in bodies)

        # Back with the bot: the next model request carries the reply but not the note.
        await page.get_by_role("button", name="Hand back to the bot").click()
        await expect(page.locator("#owner")).to_have_text("Answered by the bot", timeout=WAIT_MS)
        await gateway.say(NUMBER, "E então?")
        window = " ".join(m["content"] or "" for m in model.calls[-1].messages)
        assert "Vou verificar." in window
        assert NOTE not in window
        assert all(NOTE not in form.get("Body", "") for form in twilio.created)
        assert errors == []
        await context.close()

        # Erased with the customer.
        response = await stack.client.request(
            "DELETE",
            f"/v1/operator/customers/{customer_id}",
            json={"reason": "asked by the customer"},
            headers=AUTH,
        )
        assert response.status == 200, await response.text()
        async with _sessions(stack)() as session:
            left = await session.scalar(select(func.count()).select_from(ConversationNote))
        assert left == 0


CANNED = [
    {"shortcut": "pedido", "text": "Olá {name}, seu pedido {order_id} saiu para entrega."},
    {"shortcut": "cupom", "text": "Seu cupom é {coupon}."},
]


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
async def test_a_canned_reply_is_filled_from_facts_and_sent(
    browser: Any, tmp_path: Path, width: int, height: int
) -> None:
    async with whatsapp_stack(tmp_path, public_url="http://relay.example.org") as gateway:
        stack, twilio = gateway.stack, gateway.twilio
        response = await stack.client.request(
            "PATCH",
            "/v1/settings/domain/default",
            json={"settings": {"canned_replies": CANNED}, "reason": "the team's replies"},
            headers=AUTH,
        )
        assert response.status < 300, await response.text()
        async with _sessions(stack).begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
        await gateway.say(NUMBER, "Cadê meu pedido?")
        source = await gateway.message_id("Cadê meu pedido?")
        async with _sessions(stack).begin() as session:
            conversation_id = await session.scalar(select(Conversation.id))
            customer_id = await session.scalar(select(Conversation.customer_id))
            assert customer_id is not None
            for key, value in (("name", "Carla"), ("order_id", "PED-4471")):
                await facts.record_fact(
                    session, customer_id, NewFact(key, value, "account", source)
                )

        context = await browser.new_context(viewport={"width": width, "height": height})
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        await sign_in(page, str(stack.client.make_url("/console/login")), USERNAME, PASSWORD)
        await page.goto(str(stack.client.make_url(f"/console/conversations/{conversation_id}")))
        await page.get_by_role("button", name="Take over").click()
        await expect(page.locator("#owner")).to_contain_text(f"Held by {USERNAME}", timeout=WAIT_MS)
        reply = page.get_by_label("Reply to the customer")
        await expect(reply).to_be_visible(timeout=WAIT_MS)

        # "/" and part of a shortcut list the matching replies; Enter picks the first.
        await reply.type("/ped")
        options = page.locator("#canned li")
        await expect(options).to_have_count(1, timeout=WAIT_MS)
        await expect(options).to_contain_text("/pedido")
        await screenshot(page, f"reply-box-canned-{width}.png")
        await reply.press("Enter")
        filled = "Olá Carla, seu pedido PED-4471 saiu para entrega."
        await expect(reply).to_have_value(filled)
        await expect(options).to_have_count(0)
        await reply.press("Enter")
        await expect(page.locator("#thread li.operator")).to_have_count(1, timeout=WAIT_MS)
        await until(lambda: twilio.created[-1]["Body"] == filled)

        # A placeholder with no fact stays visible and the send is refused until it is edited.
        sent = len(twilio.created)
        await reply.type("/cupom")
        await page.locator("#canned li", has_text="/cupom").click()
        await expect(reply).to_have_value("Seu cupom é {coupon}.")
        await reply.press("Enter")
        await expect(page.locator("#control-error")).to_contain_text("{coupon}")
        await stack.idle()
        assert len(twilio.created) == sent
        await reply.fill("Seu cupom é VOLTA10.")
        await reply.press("Enter")
        await expect(page.locator("#thread li.operator")).to_have_count(2, timeout=WAIT_MS)
        await until(lambda: twilio.created[-1]["Body"] == "Seu cupom é VOLTA10.")
        assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        assert errors == []
        await context.close()


CONTENT_SID = "HX" + "1" * 32


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
async def test_the_template_picker_sends_a_template_when_the_window_is_closed(
    browser: Any, tmp_path: Path, width: int, height: int
) -> None:
    async with whatsapp_stack(tmp_path, public_url="http://relay.example.org") as gateway:
        stack, twilio = gateway.stack, gateway.twilio
        templates = {
            "reengage": {"content_sid": CONTENT_SID, "variables": {"1": "name", "2": "order_id"}}
        }
        response = await stack.client.request(
            "PATCH",
            "/v1/settings/domain/default",
            json={"settings": {"whatsapp_templates": templates}, "reason": "approved templates"},
            headers=AUTH,
        )
        assert response.status < 300, await response.text()
        async with _sessions(stack).begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
        await gateway.say(NUMBER, "Oi")
        source = await gateway.message_id("Oi")
        async with _sessions(stack).begin() as session:
            conversation_id = await session.scalar(select(Conversation.id))
            customer_id = await session.scalar(select(Conversation.customer_id))
            assert customer_id is not None
            await facts.record_fact(
                session, customer_id, NewFact("name", "Carla", "account", source)
            )

        context = await browser.new_context(viewport={"width": width, "height": height})
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        await sign_in(page, str(stack.client.make_url("/console/login")), USERNAME, PASSWORD)
        url = str(stack.client.make_url(f"/console/conversations/{conversation_id}"))
        await page.goto(url)
        await page.get_by_role("button", name="Take over").click()
        await expect(page.locator("#owner")).to_contain_text(f"Held by {USERNAME}", timeout=WAIT_MS)
        await expect(page.locator("#reply-state")).to_contain_text("whatsapp · window open")
        await expect(page.locator("#template-form")).to_be_hidden()

        # A day later the window is closed: the picker offers the tenant's template.
        async with _sessions(stack).begin() as session:
            await session.execute(
                update(Conversation).values(last_inbound_at=utcnow() - timedelta(hours=25))
            )
        await page.reload()
        await expect(page.locator("#reply-state")).to_contain_text("window closed", timeout=WAIT_MS)
        picker = page.locator("#template-form")
        await expect(picker).to_be_visible(timeout=WAIT_MS)
        await expect(page.locator("#template-name")).to_have_value("reengage")
        await expect(page.locator('[data-variable="1"]')).to_have_value("Carla")
        await expect(page.locator('[data-variable="2"]')).to_have_value("")
        await page.locator('[data-variable="2"]').fill("PED-9")
        await screenshot(page, f"reply-box-template-{width}.png")
        sent = len(twilio.created)
        await page.get_by_role("button", name="Send template").click()
        await until(lambda: len(twilio.created) > sent)
        form = twilio.created[-1]
        assert form["ContentSid"] == CONTENT_SID
        assert json.loads(form["ContentVariables"]) == {"1": "Carla", "2": "PED-9"}
        await expect(page.locator("#thread")).to_contain_text(
            "[WhatsApp template reengage]", timeout=WAIT_MS
        )
        assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        assert errors == []
        await context.close()

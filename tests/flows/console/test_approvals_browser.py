"""An operator approves a waiting action in a real headless Chromium: the conversations page
lists it, the conversation's page shows it with its masked values, Approve sends it once and
the customer is told; the customer's profile and the turn's trace show the calls. Screenshots
are kept beside the test's temporary files (`approval-*.png`)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from gateway.storage.models import ActionConfirmation
from tests.flows.actions.approvals_support import ASK, CHANGE, talking
from tests.support.console import PASSWORD, USERNAME

try:
    from playwright.async_api import Browser, Page, expect
except ImportError:  # the browser fixture skips the test and says why
    pass

WAIT_MS = 10_000


async def _shot(page: Page, tmp_path: Path, name: str) -> None:
    await page.screenshot(path=str(tmp_path / f"approval-{name}.png"), full_page=True)


async def test_an_operator_approves_a_waiting_action_and_sees_it_sent(
    browser: Browser, tmp_path: Path
) -> None:
    async with talking(tmp_path) as talk:
        await talk.say(ASK)
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)

        await page.goto(str(talk.stack.client.make_url("/console/login")))
        await page.get_by_label("Username").fill(USERNAME)
        await page.get_by_label("Password").fill(PASSWORD)
        await page.get_by_role("button", name="Log in").click()
        waiting = page.locator("#approvals tr[data-held-id]")
        await expect(waiting).to_have_count(1, timeout=WAIT_MS)
        await expect(waiting).to_contain_text("change_pix_key")
        await expect(page.locator("#live-status")).to_have_attribute(
            "data-state", "live", timeout=WAIT_MS
        )
        await _shot(page, tmp_path, "list")

        # The conversation's page: the action, its masked values, Approve and Reject.
        await waiting.get_by_role("link", name="Open").click()
        held = page.locator("#held-actions li.held")
        await expect(held).to_have_attribute("data-state", "approval")
        await expect(held).to_contain_text("waiting for an operator")
        await expect(held.locator("dl.values")).to_contain_text("***@example.org")
        await expect(held.get_by_role("button", name="Reject")).to_be_visible()
        await expect(page.locator("#thread li.message")).to_have_count(2, timeout=WAIT_MS)
        await _shot(page, tmp_path, "waiting")

        approve = held.locator("form", has=page.get_by_role("button", name="Approve"))
        await approve.get_by_label("Reason").fill("confirmed with the customer by phone")
        await approve.get_by_role("button", name="Approve").click()

        await expect(page.locator(".notice")).to_have_text(
            "action approved and sent: ok; the customer was told", timeout=WAIT_MS
        )
        await expect(held).to_have_attribute("data-state", "approved")
        await expect(held).to_contain_text("approved and sent")
        await expect(held.get_by_role("button", name="Approve")).to_have_count(0)
        # The outcome reaches the thread as the team's message.
        await expect(page.locator("#thread li.operator")).to_contain_text(
            f"Nossa equipe aprovou e concluímos: {CHANGE}", timeout=WAIT_MS
        )
        await _shot(page, tmp_path, "approved")
        [(headers, body)] = talk.api.seen
        async with talk.stack.sessions()() as session:
            row = await session.scalar(select(ActionConfirmation))
        assert row is not None and headers["Idempotency-Key"] == row.id
        assert body == {"key": "ana@example.org"}

        # The customer's profile lists the calls; the message's page, its turn's trace.
        await page.goto(str(talk.stack.client.make_url(f"/console/customers/{row.customer_id}")))
        calls = page.locator("#action-calls tbody tr")
        await expect(calls).to_have_count(2)
        await expect(calls.first).to_contain_text("approved · ok")
        await page.locator("#action-calls").scroll_into_view_if_needed()
        await _shot(page, tmp_path, "profile")
        message = f"/console/customers/{row.customer_id}/messages/{talk.message_ids[0]}"
        await page.goto(str(talk.stack.client.make_url(message)))
        await expect(page.locator("#turn tr[data-tool=change_pix_key]")).to_contain_text(
            "awaiting_confirmation"
        )
        await _shot(page, tmp_path, "trace")
        assert errors == []
        await context.close()

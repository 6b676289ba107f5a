"""Assignment and unread counts across two operators' pages in Chromium: each operator's
unread count of a conversation drops when *they* open it (not when the other does); Ana
assigns a conversation to Bia and it appears in Bia's "Mine" on her open page (live, no
reload) and not in Ana's; the assignment is audited."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.operators.accounts import create_operator
from gateway.storage.repositories.operators import OperatorRole
from tests.support.browser import screenshot
from tests.support.console import AUTH, PASSWORD, USERNAME
from tests.support.inbox import inbox_stack, seed_inbox
from tests.support.stack import Stack
from tests.support.telegram_server import FakeBotApi

# Live pages timed against a browser: alone, as the other timed tests (flaky beside a parallel run).
pytestmark = pytest.mark.serial

try:
    from playwright.async_api import Browser, expect
except ImportError:  # the browser fixture skips
    pass

WAIT_MS = 10_000
TEAMMATE = "bia.ops"
TEAMMATE_PASSWORD = "another long passphrase 7"


@pytest.fixture
async def stack(tmp_path: Path, bot_api: tuple[FakeBotApi, str]) -> AsyncIterator[Stack]:
    async with inbox_stack(tmp_path, bot_api[1]) as running:
        async with running.sessions().begin() as session:
            await create_operator(session, TEAMMATE, TEAMMATE_PASSWORD, role=OperatorRole.AGENT)
        yield running


async def _console(browser: Browser, stack: Stack, username: str, password: str) -> Any:
    context = await browser.new_context(viewport={"width": 1366, "height": 768})
    page = await context.new_page()
    await page.goto(str(stack.client.make_url("/console/login")))
    await page.get_by_label("Username").fill(username)
    await page.get_by_label("Password").fill(password)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.locator("section li[data-conversation]")).to_have_count(4, timeout=WAIT_MS)
    return page


def _row(page: Any, name: str) -> Any:
    return page.locator("section:not([hidden]) li[data-conversation]", has_text=name)


async def test_unread_counts_per_operator_and_assignment_into_a_teammates_mine(
    browser: Browser, stack: Stack
) -> None:
    await seed_inbox(stack)
    ana = await _console(browser, stack, USERNAME, PASSWORD)
    bia = await _console(browser, stack, TEAMMATE, TEAMMATE_PASSWORD)
    for page in (ana, bia):
        await expect(_row(page, "João Pereira").locator(".unread")).to_have_text("1")

    # Ana opens João's conversation: read for her, still unread for Bia.
    await _row(ana, "João Pereira").locator("a.name").click()
    await expect(ana.locator("#thread li.message")).to_have_count(2, timeout=WAIT_MS)
    await ana.get_by_role("link", name="← Conversations").click()
    await expect(_row(ana, "João Pereira")).to_have_count(1, timeout=WAIT_MS)
    await expect(_row(ana, "João Pereira").locator(".unread")).to_have_count(0)
    await expect(_row(ana, "Ana Souza").locator(".unread")).to_have_text("1")
    await bia.reload()
    await expect(_row(bia, "João Pereira").locator(".unread")).to_have_text("1", timeout=WAIT_MS)

    # Bia watches her "Mine": empty. Ana assigns João's conversation to her.
    await bia.get_by_role("button", name="Mine").click()
    await expect(bia.locator("section:not([hidden]) li[data-conversation]")).to_have_count(0)
    await _row(ana, "João Pereira").locator("a.name").click()
    await expect(ana.locator("#assigned")).to_have_text("Unassigned", timeout=WAIT_MS)
    await ana.get_by_label("Assign to a teammate").fill(TEAMMATE)
    await ana.get_by_role("button", name="Assign", exact=True).click()
    await expect(ana.locator("#assigned")).to_have_text(f"Assigned to {TEAMMATE}", timeout=WAIT_MS)
    await screenshot(ana, "inbox-assigned-1366.png")

    # Bia's open page shows it in "Mine" without a reload; Ana's "Mine" stays empty.
    mine = bia.locator("section:not([hidden]) li[data-conversation]")
    await expect(mine).to_have_count(1, timeout=WAIT_MS)
    await expect(mine).to_contain_text("João Pereira")
    await expect(mine).to_contain_text(f"assigned to {TEAMMATE}")
    await screenshot(bia, "inbox-mine-1366.png")
    await ana.get_by_role("link", name="← Conversations").click()
    await ana.get_by_role("button", name="Mine").click()
    await expect(ana.locator("section:not([hidden]) li[data-conversation]")).to_have_count(
        0, timeout=WAIT_MS
    )

    # Bia takes it for herself back from nobody else: "Assign to me" is hidden, it is hers.
    await mine.locator("a.name").click()
    await expect(bia.locator("#assigned")).to_have_text("Assigned to you", timeout=WAIT_MS)
    await expect(bia.get_by_role("button", name="Assign to me")).to_be_hidden()

    response = await stack.client.get(
        "/v1/operator/audit?action=conversation.assigned", headers=AUTH
    )
    entries = (await response.json())["audit"]
    assert [(e["actor"], e["details"]["operator"]) for e in entries] == [(USERNAME, TEAMMATE)]


async def test_an_assignment_to_nobody_who_may_log_in_is_refused(stack: Stack) -> None:
    await seed_inbox(stack)
    listed = await stack.client.get("/v1/operator/conversations", headers=AUTH)
    conversation = (await listed.json())["conversations"][0]
    assert conversation["assigned_to"] is None and conversation["unread"] is None  # API key
    path = f"/v1/operator/conversations/{conversation['id']}/assign"

    refused = await stack.client.post(
        path, json={"operator": "nobody", "reason": "try", "actor": "api"}, headers=AUTH
    )
    assert refused.status == 400
    assert (await refused.json())["error"] == "unknown_operator"

    done = await stack.client.post(
        path, json={"operator": TEAMMATE, "reason": "hers", "actor": "lead"}, headers=AUTH
    )
    assert done.status == 200 and (await done.json())["assigned_to"] == TEAMMATE
    unassigned = await stack.client.post(
        path, json={"operator": None, "reason": "back", "actor": "lead"}, headers=AUTH
    )
    assert (await unassigned.json())["previous_assigned_to"] == TEAMMATE
    listed = await stack.client.get("/v1/operator/conversations", headers=AUTH)
    assert all(c["assigned_to"] is None for c in (await listed.json())["conversations"])

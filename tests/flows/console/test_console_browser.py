"""The console in a real headless Chromium (Debian `chromium`, driven by Playwright) against a
real gateway: log in, find a customer by phone, open the profile, confirm a pending link,
correct a fact and see the context preview carry the correction. Screenshots are kept in
`tests/artifacts/console-*.png`."""

from __future__ import annotations

from typing import Any

from gateway.keys import MEMORY
from tests.support.browser import screenshot
from tests.support.console import AUTH, PASSWORD, USERNAME, seed
from tests.support.stack import Stack

try:
    from playwright.async_api import Browser, expect
except ImportError:  # the skip below says why
    pass

WAIT_MS = 10_000
OTHER_PHONE = "+5511912345678"


def _call(customer_id: str) -> dict[str, Any]:
    turns = [
        ("agent", [("Central,", 0.97), ("bom", 0.97), ("dia", 0.97)]),
        (
            "customer",
            [("Meu", 0.9), ("pedido", 0.9), ("é", 0.9), ("o", 0.9), ("4471", 0.31), ("ok", 0.9)],
        ),
    ]
    return {
        "call_id": "call-console-1",
        "caller": OTHER_PHONE,
        "customer_id": customer_id,
        "started_at": "2026-11-02T14:00:00Z",
        "format": "native",
        "customer_speaker": "customer",
        "transcript": {
            "segments": [
                {
                    "speaker": speaker,
                    "text": " ".join(w for w, _ in words),
                    "start": float(i * 5),
                    "end": float(i * 5 + 4),
                    "confidence": min(c for _, c in words),
                    "words": [
                        {"text": w, "confidence": c, "start": float(i * 5), "end": float(i * 5)}
                        for w, c in words
                    ],
                }
                for i, (speaker, words) in enumerate(turns)
            ]
        },
    }


async def test_operator_confirms_a_link_corrects_a_fact_and_previews_the_window(
    browser: Browser, stack: Stack
) -> None:
    seeded = await seed(stack)
    posted = await stack.client.post(
        "/v1/transcripts", json=_call(seeded.customer_id), headers=AUTH
    )
    assert posted.status == 201, await posted.text()
    await stack.app[MEMORY].queue.drained()  # type: ignore[attr-defined]
    base = str(stack.client.make_url("/console"))

    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)

    # Not logged in: the console sends the browser to the login page.
    await page.goto(base)
    await expect(page).to_have_url(f"{base}/login")
    await page.get_by_label("Username").fill(USERNAME)
    await page.get_by_label("Password").fill(PASSWORD)
    await screenshot(page, "console-login.png")
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_text(f"signed in as {USERNAME}")).to_be_visible()

    # Search by phone, written the way a person would.
    await page.get_by_label("Phone, e-mail, name or id").fill("+55 11 99876-5432")
    await page.get_by_role("button", name="Search").click()
    hits = page.locator("ul.hits li")
    await expect(hits).to_have_count(2)  # the WhatsApp customer and the caller waiting to link
    await screenshot(page, "console-search.png")
    await page.locator(f'a[href="/console/customers/{seeded.customer_id}"]').click()
    await expect(page.locator("h1")).to_contain_text(seeded.customer_id)

    # The pending link: confirm it with a reason.
    pending = page.locator(f'li.pending[data-link-id="{seeded.pending_link_id}"]')
    await expect(pending).to_contain_text("phone")
    confirm = pending.locator("form").filter(has=page.get_by_role("button", name="Confirm link"))
    await confirm.get_by_label("Reason").fill("caller verified date of birth on the phone")
    await confirm.get_by_role("button", name="Confirm link").click()
    await expect(page.locator(".notice")).to_contain_text("confirm_link recorded")
    await expect(page.locator("li.pending")).to_have_count(0)
    await expect(page.locator("#identities")).to_contain_text("phone:+5511998765432")

    # The phone transcript shows its doubtful number highlighted.
    await expect(page.locator("#episodes mark.low").first).to_contain_text("4471")

    # Correct the e-mail.
    row = page.locator('tr[data-fact-key="email"]')
    await expect(row.locator("td.value")).to_have_text("ana@old.example")
    await row.get_by_text("Correct, pin or retract").click()
    form = row.locator("form").filter(has=page.get_by_role("button", name="Correct"))
    await form.get_by_label("New value").fill("ana.souza@new.example")
    await form.get_by_label("Reason").fill("customer dictated the new address")
    await form.get_by_role("button", name="Correct").click()
    await expect(page.locator(".notice")).to_contain_text("fact corrected")
    row = page.locator('tr[data-fact-key="email"]')
    await expect(row.locator("td.value")).to_have_text("ana.souza@new.example")
    await expect(row.locator("ul.history s")).to_have_text(["ana@old.example"])
    await expect(row).to_contain_text("console message #")
    await expect(row).to_contain_text("confirmed")
    await screenshot(page, "console-profile.png")

    # Context preview from the WhatsApp identity: the window carries the corrected value.
    await page.get_by_label("Channel identity").select_option(seeded.whatsapp_identity_id)
    await page.get_by_label("Sample message").fill("qual é o meu e-mail cadastrado?")
    await page.get_by_role("button", name="Preview context").click()
    await expect(page.locator("h1")).to_have_text("Context preview")
    system = page.locator("ol.window li").first
    await expect(system).to_contain_text("ana.souza@new.example")
    await expect(system).not_to_contain_text("ana@old.example")
    slices = await page.locator("table.slices tbody tr").count()
    assert slices >= 5
    await expect(page.locator("svg.budget rect.seg")).to_have_count(slices)
    await expect(page.locator('tr[data-slice="facts"] meter')).to_have_count(1)
    await expect(page.locator("p.budget-figures")).to_contain_text("input tokens")
    await screenshot(page, "console-preview.png")

    # The audit log shows both actions with their reasons.
    await page.goto(f"{base}/audit")
    await expect(page.locator('tr[data-action="confirm_link"]')).to_contain_text(
        "caller verified date of birth on the phone"
    )
    await expect(page.locator('tr[data-action="correct_fact"]')).to_contain_text(
        "customer dictated the new address"
    )
    await screenshot(page, "console-audit.png")

    # Logging out ends the login.
    await page.get_by_role("button", name="Log out").click()
    await expect(page).to_have_url(f"{base}/login")
    await page.goto(f"{base}/customers/{seeded.customer_id}")
    await expect(page).to_have_url(f"{base}/login")
    assert errors == []
    await context.close()

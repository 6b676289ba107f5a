"""The outcome report in a real headless Chromium: its three SVG charts are drawn (bars with
a size) and the page never scrolls sideways, on a laptop and on a phone. Screenshots are kept
as `tests/artifacts/console-reports-*.png`."""

from __future__ import annotations

import pytest

from tests.support.browser import screenshot
from tests.support.console import PASSWORD, USERNAME
from tests.support.outcome_seed import DAY_1, DAY_2, seed_outcomes
from tests.support.stack import Stack

try:
    from playwright.async_api import Browser, expect
except ImportError:  # the browser fixture skips with the reason
    pass


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
async def test_the_charts_render_without_sideways_scrolling(
    browser: Browser, stack: Stack, width: int, height: int
) -> None:
    async with stack.sessions().begin() as session:
        await seed_outcomes(session)
    base = str(stack.client.make_url("/console"))
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    await page.goto(f"{base}/login")
    await page.get_by_label("Username").fill(USERNAME)
    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_text(f"signed in as {USERNAME}")).to_be_visible()

    await page.goto(f"{base}/reports?since={DAY_1}&until={DAY_2}")
    charts = page.locator("svg.report-chart")
    await expect(charts).to_have_count(3)
    for index in range(3):
        box = await charts.nth(index).bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 50
        assert box["x"] >= 0 and box["x"] + box["width"] <= width
    # The bars themselves are drawn: a stacked day, a reason, a first-reply percentile.
    for title in ("2026-03-03 webchat: 2", "Model failures: 1", "2026-03-03 p90: 8 s"):
        bar = page.locator("rect", has=page.locator(f'title:text-is("{title}")'))
        box = await bar.bounding_box()
        assert box is not None and box["width"] > 0 and box["height"] > 0, title
    overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    await screenshot(page, f"console-reports-{width}x{height}.png")
    assert errors == []
    await context.close()

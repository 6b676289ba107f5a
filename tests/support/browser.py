"""Headless Debian Chromium through Playwright, shared by the browser tests.

Never a downloaded browser build: `/usr/bin/chromium` from the Debian package. Where it or the
playwright package is missing the tests are skipped with the reason (failed in CI).
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.databases import unavailable

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def browser_missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed"
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (Debian package chromium)"
    return None


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """A launched headless Chromium (a Playwright `Browser`)."""
    why = browser_missing()
    if why is not None:
        unavailable("headless Chromium", why)
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """A headless Chromium for one test (skipped where it cannot be had)."""
    async with chromium() as launched:
        yield launched


async def screenshot(page: Any, name: str) -> None:
    """Keep a full-page screenshot as `tests/artifacts/<name>`."""
    ARTIFACTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / name), full_page=True)


async def sign_in(page: Any, login_url: str, username: str, password: str) -> None:
    """Log in through the console's form and wait until the console it lands on says who is
    signed in and has read its conversations once (live), as an operator would see it before
    opening one: a page opened while the login's own navigation, or the list's first reads,
    are still under way races them."""
    from playwright.async_api import expect

    await page.goto(login_url)
    await page.get_by_label("Username").fill(username)
    await page.get_by_label("Password").fill(password)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_text(f"signed in as {username}")).to_be_visible(timeout=10_000)
    await expect(page.locator("#live-status")).to_have_attribute(
        "data-state", "live", timeout=10_000
    )

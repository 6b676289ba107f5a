"""`GET /`: the landing page through a real app on a real socket, then rendered in a headless
Chromium; `GET /docs/{name}`: the guides of `docs/` as plain text, and nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient

from gateway.http import landing
from tests.support.browser import screenshot
from tests.support.stack import running_stack

REPOSITORY_DOCS = Path(__file__).resolve().parents[2] / "docs"


async def test_the_landing_page_links_the_widget_the_console_and_the_guides(
    api: TestClient,  # type: ignore[type-arg]
) -> None:
    response = await api.get("/")
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    policy = response.headers["Content-Security-Policy"]
    assert policy.startswith("default-src 'none'; style-src 'sha256-")
    html = await response.text()
    for link in ('href="/chat"', 'href="/console"', 'href="/docs/index.md"', "/openapi.json"):
        assert link in html, link
    assert "relaydesk operator add NAME --admin" in html
    # Nothing fetched from elsewhere: the page renders offline.
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html


async def test_the_guides_are_served_as_plain_text_and_only_they(
    api: TestClient,  # type: ignore[type-arg]
) -> None:
    index = await api.get("/docs/index.md")
    assert index.status == 200
    assert index.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert await index.text() == (REPOSITORY_DOCS / "index.md").read_text(encoding="utf-8")
    nested = await api.get("/docs/channels/twilio-whatsapp.md")
    assert nested.status == 200
    assert "When a message comes in" in await nested.text()
    for refused in ("/docs/../pyproject.toml", "/docs/%2e%2e/README.md", "/docs/missing.md"):
        answer = await api.get(refused)
        assert answer.status == 404, refused
        assert (await answer.json())["error"] == "not_found"


def test_only_guide_names_found_in_the_folder_are_served(tmp_path: Path) -> None:
    (tmp_path / "channels").mkdir()
    (tmp_path / "index.md").write_text("# Guides")
    (tmp_path / "channels" / "telegram.md").write_text("# Telegram")
    (tmp_path / "Notes.md").write_text("not a guide name")
    (tmp_path / "secret.txt").write_text("not Markdown")
    assert set(landing.find_guides(tmp_path)) == {"index.md", "channels/telegram.md"}
    assert landing.find_guides(tmp_path / "absent") == {}


async def test_without_the_guides_the_page_says_where_they_are(
    tmp_path: Path, aiohttp_client: AiohttpClient
) -> None:
    app = web.Application()
    landing.add_routes(app, docs=tmp_path / "absent")
    client = await aiohttp_client(app)
    html = await (await client.get("/")).text()
    assert "/docs/index.md" not in html
    assert "<code>docs/index.md</code>" in html
    assert (await client.get("/docs/index.md")).status == 404


async def test_the_landing_page_renders_in_chromium(browser: Any, tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        context = await browser.new_context(viewport={"width": 1024, "height": 720})
        # Offline: any request leaving the gateway would fail the page.
        await context.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith(str(stack.client.make_url("/")))
                else route.abort()
            ),
        )
        page = await context.new_page()
        refused: list[str] = []
        page.on("console", lambda message: refused.append(message.text))
        await page.goto(str(stack.client.make_url("/")))
        assert await page.title() == "Relaydesk"
        heading = page.locator("h1")
        assert await heading.inner_text() == "Relaydesk"
        # The inline style applies (its hash is in the CSP): the links sit in bordered boxes.
        border = await page.locator("li").first.evaluate(
            "element => getComputedStyle(element).borderTopStyle"
        )
        assert border == "solid"
        assert refused == []  # no CSP violation, no failed load
        await screenshot(page, "landing-page.png")
        await page.click('a[href="/chat"]')
        await page.wait_for_url("**/chat")
        assert await page.title() != "Relaydesk"  # the widget's own page
        await page.go_back()
        await page.click('a[href="/docs/index.md"]')
        await page.wait_for_url("**/docs/index.md")
        guide = await page.locator("body").inner_text()
        assert guide.startswith("# Relaydesk documentation")
        await context.close()

"""`relaydesk knowledge add --url|--sitemap` and `relaydesk knowledge sync` on a database file,
against a help center on loopback (listed in RELAYDESK_FETCH_ALLOW): a page fetched and
stored, a sitemap's pages added, a sync answered 304 carrying the ETag, a failure noted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.knowledge.cli_commands import tenant_named
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.repositories import knowledge
from tests.support.knowledge_site import HelpCenter, help_center

SHOP = ("--tenant", "shop.example.com")


@pytest.fixture
async def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'knowledge.db'}"
    monkeypatch.setenv("RELAYDESK_DATABASE_URL", url)
    monkeypatch.setenv("RELAYDESK_AUTO_MIGRATE", "true")
    monkeypatch.setenv("RELAYDESK_FETCH_ALLOW", "127.0.0.1")
    monkeypatch.delenv("RELAYDESK_REDIS_URL", raising=False)
    yield url


@pytest.fixture
async def site() -> AsyncIterator[HelpCenter]:
    async with help_center() as served:
        yield served


async def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, ["knowledge", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def _documents(url: str) -> list[knowledge.DocumentRecord]:
    engine = make_engine(url)
    try:
        async with make_sessionmaker(engine)() as session:
            return await knowledge.list_documents(session, tenant_named("shop.example.com"))
    finally:
        await engine.dispose()


async def test_a_page_added_by_url_then_synced(
    database: str, site: HelpCenter, capsys: pytest.CaptureFixture[str]
) -> None:
    url = site.url("/help/returns.md")
    code, out, err = await _run(capsys, "add", "--url", url, "--audience", "public", *SHOP)
    assert code == 0, err
    assert out.startswith("added ") and "Returns (2 chunks)" in out
    document_id = out.split()[1].rstrip(":")

    code, out, err = await _run(capsys, "sync", document_id, *SHOP)
    assert code == 0, err
    assert out.startswith(f"not_modified {document_id}:")
    assert site.requests_for("/help/returns.md")[-1].if_none_match == '"returns-1"'

    site.failing.add("/help/returns.md")
    code, out, _ = await _run(capsys, "sync", *SHOP)  # every URL document
    assert code == 1 and out.startswith(f"failed {document_id}:") and "answered 500" in out
    code, _, err = await _run(capsys, "sync", "nope", *SHOP)
    assert code == 1 and "no document nope" in err


async def test_a_sitemap_adds_its_pages(
    database: str, site: HelpCenter, capsys: pytest.CaptureFixture[str]
) -> None:
    site.sitemap("/sitemap.xml", ["/help/returns.md", "/help/hours.html"])
    code, out, err = await _run(
        capsys, "add", "--sitemap", site.url("/sitemap.xml"), "--audience", "customers", *SHOP
    )
    assert code == 0, err
    assert "2 pages from the sitemap, 0 skipped" in out
    stored = await _documents(database)
    assert sorted((d.title, d.audience.value) for d in stored) == [
        ("Opening hours", "customers"),
        ("Returns", "customers"),
    ]

    code, _, err = await _run(
        capsys, "add", "--sitemap", site.url("/help/returns.md"), "--audience", "public", *SHOP
    )
    assert code == 2 and "is not a sitemap" in err

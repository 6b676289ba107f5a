"""Conditional fetches against a real local server: the validators sent as If-None-Match and
If-Modified-Since, a 304 returned as an empty `Fetched` with the answer's validators, and the
validators of a full answer carried; without validators a 304 is no answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from aiohttp import web

from devtools.loopback import serving_on_loopback
from outbound import FetchFailed, FetchKind, FetchPolicy, SafeFetcher

ETAG = '"v1"'
MODIFIED = "Mon, 02 Nov 2026 09:00:00 GMT"


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, list[dict[str, str | None]]]]:
    seen: list[dict[str, str | None]] = []

    async def page(request: web.Request) -> web.Response:
        seen.append(
            {
                "If-None-Match": request.headers.get("If-None-Match"),
                "If-Modified-Since": request.headers.get("If-Modified-Since"),
            }
        )
        validators = {"ETag": ETAG, "Last-Modified": MODIFIED}
        if request.headers.get("If-None-Match") == ETAG or request.query.get("always") == "304":
            return web.Response(status=304, headers=validators)
        return web.Response(text="# Page", content_type="text/markdown", headers=validators)

    app = web.Application()
    app.router.add_get("/page", page)
    async with serving_on_loopback(app) as root:
        yield root, seen


async def test_validators_are_sent_and_a_304_is_an_empty_answer(
    served: tuple[str, list[dict[str, str | None]]],
) -> None:
    root, seen = served
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]))
    try:
        full = await fetcher.get(f"{root}/page", kind=FetchKind.DOCUMENT)
        current = await fetcher.get(
            f"{root}/page",
            kind=FetchKind.DOCUMENT,
            if_none_match=full.etag,
            if_modified_since=datetime(2026, 11, 2, 9, 0, tzinfo=UTC),
        )
        changed = await fetcher.get(f"{root}/page", kind=FetchKind.DOCUMENT, if_none_match='"v0"')
        with pytest.raises(FetchFailed, match="answered 304"):
            await fetcher.get(f"{root}/page?always=304", kind=FetchKind.DOCUMENT)
    finally:
        await fetcher.aclose()
    assert (full.status, full.body, full.etag, full.last_modified) == (
        200,
        b"# Page",
        ETAG,
        MODIFIED,
    )
    assert not full.not_modified
    assert (current.status, current.body, current.not_modified) == (304, b"", True)
    assert (current.etag, current.last_modified) == (ETAG, MODIFIED)
    assert changed.status == 200 and changed.body == b"# Page"
    assert seen[0] == {"If-None-Match": None, "If-Modified-Since": None}
    assert seen[1] == {"If-None-Match": ETAG, "If-Modified-Since": MODIFIED}
    assert seen[2]["If-None-Match"] == '"v0"'


def test_a_document_may_take_ten_mib() -> None:
    assert FetchKind.DOCUMENT.max_bytes == 10 * 1024 * 1024

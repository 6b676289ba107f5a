"""The background embedding loop runs where background work runs, and only with an embedder:
a process with embeddings off, or one that only acknowledges webhooks, starts none."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import create_app
from gateway.config import Settings
from tests.support.databases import REDIS_URL, redis_reachable, unavailable


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "RELAYDESK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}",
        "RELAYDESK_WEBCHAT_SECRET": "webchat-secret-for-tests-0123456789abcdef",
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def _embedding_tasks() -> list[asyncio.Task[object]]:
    return [task for task in asyncio.all_tasks() if task.get_name() == "embeddings"]


async def _running_with(settings: Settings) -> int:
    client = TestClient(TestServer(create_app(settings)))
    await client.start_server()
    try:
        return len(_embedding_tasks())
    finally:
        await client.close()
        assert _embedding_tasks() == []


@pytest.mark.parametrize(
    ("provider", "expected"),
    [("offline", 1), ("openai", 1), ("off", 0)],
)
async def test_the_loop_runs_only_with_an_embedder(
    tmp_path: Path, provider: str, expected: int
) -> None:
    settings = _settings(
        tmp_path,
        RELAYDESK_EMBEDDINGS_PROVIDER=provider,
        RELAYDESK_EMBEDDINGS_URL="http://127.0.0.1:9/v1",  # never called: the first pass waits
    )
    assert await _running_with(settings) == expected


async def test_a_process_that_only_acknowledges_runs_no_loop(tmp_path: Path) -> None:
    if (why := await redis_reachable()) is not None:
        unavailable("Redis", why)
    settings = _settings(tmp_path, RELAYDESK_RUN_BACKGROUND="false", RELAYDESK_REDIS_URL=REDIS_URL)
    assert await _running_with(settings) == 0

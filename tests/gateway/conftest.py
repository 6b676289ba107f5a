"""Gateway fixtures: a real app on a fresh SQLite file, reached over a real socket."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient

from gateway.app import create_app
from gateway.config import Settings

API_KEY = "test-api-key"


def make_settings(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "RELAYDESK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}",
        "RELAYDESK_API_KEY": API_KEY,
        "RELAYDESK_WEBCHAT_SECRET": "webchat-secret-for-tests-0123456789abcdef",
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def api(tmp_path: Path, aiohttp_client: AiohttpClient) -> TestClient:  # type: ignore[type-arg]
    return await aiohttp_client(create_app(make_settings(tmp_path)))


AUTH = {"Authorization": f"Bearer {API_KEY}"}

"""Whole-app fixtures: a real app on a fresh SQLite file, reached over a real socket."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient

from gateway.app import create_app
from tests.support.app_settings import make_settings


@pytest.fixture
async def api(tmp_path: Path, aiohttp_client: AiohttpClient) -> TestClient:  # type: ignore[type-arg]
    return await aiohttp_client(create_app(make_settings(tmp_path)))

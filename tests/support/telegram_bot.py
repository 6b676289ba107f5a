"""Fixtures for tests that drive python-telegram-bot against the local Bot API of
`tests.support.telegram_server` (registered for every test by ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestServer

from tests.support.telegram_server import FakeBotApi


@pytest.fixture
def timedelta_periods(monkeypatch: pytest.MonkeyPatch) -> None:
    """python-telegram-bot's opt-in to `timedelta` time periods: without it, building a
    `RetryAfter` warns about the coming change (an error here, silent in production).

    A module opts all its tests in with ``pytestmark = pytest.mark.usefixtures(...)``."""
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


@pytest.fixture
async def bot_api() -> AsyncIterator[tuple[FakeBotApi, str]]:
    """A `FakeBotApi` on a local port, and its base URL (no trailing slash)."""
    api = FakeBotApi()
    server = TestServer(api.app())
    await server.start_server()
    yield api, str(server.make_url("")).rstrip("/")
    await server.close()

"""Fixtures: a shared httpx client and the fake embeddings server on a local socket."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
from pytest_aiohttp import AiohttpServer

from tests.support.openai_embeddings_server import FakeEmbeddings

StartEmbeddings = Callable[[FakeEmbeddings], Awaitable[str]]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def start_embeddings(aiohttp_server: AiohttpServer) -> StartEmbeddings:
    """``await start_embeddings(fake)`` → the base URL (ending in ``/v1``) it answers at."""

    async def start(fake: FakeEmbeddings) -> str:
        server = await aiohttp_server(fake.app())
        return str(server.make_url("/v1"))

    return start

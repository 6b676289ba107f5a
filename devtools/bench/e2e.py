"""End-to-end timing of ``POST /v1/context``.

The real app (`create_app`) listens on 127.0.0.1 on a free port; an httpx client on the same
event loop sends the requests with the API key, so each sample is the whole request: HTTP,
auth, body validation, tenant settings, identity resolution, storage reads and the build.
On PostgreSQL it runs on a temporary database (`devtools.bench.services.temporary_database`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx

from devtools.bench.measure import Timing, time_async
from devtools.loopback import serving_on_loopback
from gateway.app import create_app
from gateway.config import Settings

API_KEY = "relaydesk-bench-key"


class EndpointError(RuntimeError):
    """``POST /v1/context`` did not answer 200 during the benchmark."""


@dataclass(frozen=True, slots=True)
class EndpointWindow:
    estimated_tokens: int
    input_budget: int
    messages: int


@asynccontextmanager
async def running_gateway(database_url: str) -> AsyncIterator[str]:
    """The gateway on an already migrated database; yields its base URL."""
    settings = Settings(
        RELAYDESK_DATABASE_URL=database_url,
        RELAYDESK_API_KEY=API_KEY,
        RELAYDESK_REDIS_URL=None,
        RELAYDESK_AUTO_MIGRATE=False,
    )
    async with serving_on_loopback(create_app(settings)) as root:
        yield root


async def time_context_endpoint(
    client: httpx.AsyncClient,
    base_url: str,
    external_ids: Mapping[int, str],
    message: str,
    repeat: int,
) -> dict[int, tuple[Timing, EndpointWindow]]:
    """Latency of ``POST /v1/context`` for each WhatsApp identity (by size), interleaved."""
    headers = {"Authorization": f"Bearer {API_KEY}"}

    def call(external_id: str) -> Callable[[], Awaitable[httpx.Response]]:
        body = {"channel": "whatsapp", "external_id": external_id, "message": message}
        return lambda: client.post(f"{base_url}/v1/context", json=body, headers=headers)

    timed = await time_async(
        {size: call(external_id) for size, external_id in external_ids.items()},
        repeat,
        warmup=2,
    )
    return {size: (timing, _window(response)) for size, (timing, response) in timed.items()}


def _window(response: httpx.Response) -> EndpointWindow:
    if response.status_code != 200:
        raise EndpointError(f"POST /v1/context answered {response.status_code}: {response.text}")
    body = response.json()
    report = body["report"]
    return EndpointWindow(
        estimated_tokens=int(report["estimated_tokens"]),
        input_budget=int(report["input_budget"]),
        messages=len(body["messages"]),
    )

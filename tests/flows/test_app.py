from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient

from gateway.app import create_app
from gateway.config import Settings
from tests.support.databases import REDIS_URL, unavailable


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "RELAYDESK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'app.db'}",
        "RELAYDESK_MAX_BODY_BYTES": 4096,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def client(tmp_path: Path, aiohttp_client: AiohttpClient) -> TestClient:  # type: ignore[type-arg]
    return await aiohttp_client(create_app(_settings(tmp_path)))


async def test_healthz_ok_on_migrated_sqlite(client: TestClient) -> None:  # type: ignore[type-arg]
    response = await client.get("/healthz")
    assert response.status == 200
    body = await response.json()
    assert body["checks"] == {"database": "ok", "redis": "not configured"}


async def test_healthz_503_when_database_unreachable(
    tmp_path: Path, aiohttp_client: AiohttpClient
) -> None:
    settings = _settings(
        tmp_path, RELAYDESK_DATABASE_URL="postgresql+asyncpg://nobody@127.0.0.1:1/none"
    )
    client = await aiohttp_client(create_app(settings))
    response = await client.get("/healthz")
    assert response.status == 503
    body = await response.json()
    assert body["error"] == "service_unavailable"
    assert body["checks"]["database"].startswith("down")


async def test_healthz_is_degraded_not_down_when_configured_redis_is_down(
    tmp_path: Path, aiohttp_client: AiohttpClient
) -> None:
    # Webhooks are still accepted without Redis: a 503 would get every gateway restarted.
    client = await aiohttp_client(
        create_app(_settings(tmp_path, RELAYDESK_REDIS_URL="redis://127.0.0.1:1/0"))
    )
    response = await client.get("/healthz")
    assert response.status == 200
    body = await response.json()
    assert body["status"] == "degraded" and body["checks"]["redis"].startswith("down")
    assert body["checks"]["database"] == "ok"


async def test_healthz_checks_a_real_redis(tmp_path: Path, aiohttp_client: AiohttpClient) -> None:
    from redis.asyncio import Redis

    probe = Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        await probe.ping()
    except Exception as exc:
        unavailable("Redis", type(exc).__name__)
    finally:
        await probe.aclose()
    client = await aiohttp_client(create_app(_settings(tmp_path, RELAYDESK_REDIS_URL=REDIS_URL)))
    response = await client.get("/healthz")
    assert response.status == 200
    assert (await response.json())["checks"]["redis"] == "ok"


async def test_oversized_body_is_413_json(tmp_path: Path, aiohttp_client: AiohttpClient) -> None:
    app = create_app(_settings(tmp_path))
    app.router.add_post("/_probe", _read_body)
    client = await aiohttp_client(app)
    declared = await client.post("/_probe", data=b"x" * 10_000)
    assert declared.status == 413
    assert (await declared.json())["error"] == "payload_too_large"

    async def chunks():  # type: ignore[no-untyped-def]
        for _ in range(10):
            yield b"x" * 1000

    streamed = await client.post("/_probe", data=chunks())
    assert streamed.status == 413
    assert (await streamed.json())["error"] == "payload_too_large"
    small = await client.post("/_probe", data=b"x" * 100)
    assert small.status == 200


async def _read_body(request):  # type: ignore[no-untyped-def]
    from aiohttp import web

    await request.read()
    return web.json_response({"ok": True})


async def test_unknown_route_is_json_404(client: TestClient) -> None:  # type: ignore[type-arg]
    response = await client.get("/no/such/route")
    assert response.status == 404
    assert response.content_type == "application/json"
    assert await response.json() == {"error": "not_found", "detail": "Not Found"}


async def test_metrics_count_requests(client: TestClient) -> None:  # type: ignore[type-arg]
    for _ in range(3):
        await client.get("/healthz")
    await client.get("/missing")
    response = await client.get("/metrics")
    assert response.status == 200
    text = await response.text()
    assert 'relaydesk_http_requests_total{method="GET",route="/healthz",status="200"} 3.0' in text
    assert 'route="unmatched",status="404"} 1.0' in text


async def test_every_post_route_refuses_an_oversized_body(
    tmp_path: Path, aiohttp_client: AiohttpClient
) -> None:
    app = create_app(_settings(tmp_path))
    client = await aiohttp_client(app)
    posts = sorted(
        {
            route.resource.canonical
            for route in app.router.routes()
            if route.method == "POST" and route.resource is not None
        }
    )
    assert "/webhooks/twilio/whatsapp" in posts and "/v1/transcripts" in posts
    for path in posts:
        concrete = path.replace("{", "").replace("}", "").replace(":", "-")
        response = await client.post(concrete, data=b"x" * 10_000)
        assert response.status == 413, path
        assert (await response.json())["error"] == "payload_too_large"

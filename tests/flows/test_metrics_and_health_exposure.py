"""What `/metrics` and `/healthz` tell a stranger: `/metrics` only to the bearer of
`RELAYDESK_METRICS_TOKEN` when one is set; `/healthz` the hostname and a random instance id,
never the pid."""

from __future__ import annotations

import logging
import os
import re
import socket
from pathlib import Path

import pytest
from pytest_aiohttp import AiohttpClient

from gateway.app import create_app
from gateway.http.health import warn_if_metrics_open
from tests.support.app_settings import make_settings

METRICS_TOKEN = "metrics-token-for-tests-0123456789"
INSTANCE = re.compile(rf"^{re.escape(socket.gethostname())}-[0-9a-f]{{8}}$")


async def test_metrics_answer_only_the_bearer_of_the_token(
    tmp_path: Path, aiohttp_client: AiohttpClient
) -> None:
    settings = make_settings(tmp_path, RELAYDESK_METRICS_TOKEN=METRICS_TOKEN)
    client = await aiohttp_client(create_app(settings))
    await client.get("/healthz")
    for headers in (
        {},
        {"Authorization": "Bearer wrong-token-of-the-same-size-01234"},
        {"Authorization": f"Basic {METRICS_TOKEN}"},
        {"Authorization": f"Bearer {METRICS_TOKEN[:-1]}"},
    ):
        refused = await client.get("/metrics", headers=headers)
        assert refused.status == 401, headers
        body = await refused.json()
        assert body["error"] == "unauthorized"
        assert "relaydesk_" not in await refused.text()
    allowed = await client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert allowed.status == 200
    text = await allowed.text()
    assert 'relaydesk_http_requests_total{method="GET",route="/healthz",status="200"}' in text
    assert "relaydesk_inbox_waiting" in text


async def test_metrics_stay_open_without_a_token(
    tmp_path: Path, aiohttp_client: AiohttpClient
) -> None:
    client = await aiohttp_client(create_app(make_settings(tmp_path)))
    response = await client.get("/metrics")
    assert response.status == 200
    assert "relaydesk_inbox_waiting" in await response.text()


async def test_healthz_names_a_random_instance_not_the_process_id(
    tmp_path: Path, aiohttp_client: AiohttpClient
) -> None:
    healthy = await aiohttp_client(create_app(make_settings(tmp_path)))
    broken = await aiohttp_client(
        create_app(
            make_settings(
                tmp_path, RELAYDESK_DATABASE_URL="postgresql+asyncpg://nobody@127.0.0.1:1/none"
            )
        )
    )
    ok, down = await healthy.get("/healthz"), await broken.get("/healthz")
    assert (ok.status, down.status) == (200, 503)
    for response in (ok, down):
        body = await response.json()
        assert "pid" not in body
        assert INSTANCE.match(body["instance"]), body
        assert str(os.getpid()) not in await response.text()
    # One process, one instance id.
    assert (await ok.json())["instance"] == (await down.json())["instance"]


@pytest.mark.parametrize(
    ("host", "token", "warned"),
    [
        ("0.0.0.0", None, True),
        ("::", None, True),
        ("relay.example.org", None, True),
        ("0.0.0.0", METRICS_TOKEN, False),
        ("127.0.0.1", None, False),
        ("::1", None, False),
        ("localhost", None, False),
    ],
)
def test_open_metrics_beyond_loopback_are_warned_about_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, host: str, token: str | None, warned: bool
) -> None:
    overrides = {} if token is None else {"RELAYDESK_METRICS_TOKEN": token}
    with caplog.at_level(logging.WARNING, logger="relaydesk.health"):
        warn_if_metrics_open(make_settings(tmp_path, **overrides), host)
    messages = [r.getMessage() for r in caplog.records if r.name == "relaydesk.health"]
    assert any("RELAYDESK_METRICS_TOKEN" in m for m in messages) is warned

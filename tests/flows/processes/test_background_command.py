"""`relaydesk background`: a real process, on no port and at a lower CPU priority, stores and
answers what a separately started acknowledging gateway (RELAYDESK_RUN_BACKGROUND=false)
accepted, and stops on SIGTERM (its refusal of the SQLite default: `test_serve_workers`)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import func, select

from gateway.app import create_app
from gateway.config import Settings
from gateway.keys import METRICS, SESSIONS
from gateway.storage.models import InboxMessage, Message
from tests.support.databases import (
    REDIS_URL,
    create_database,
    drop_database,
    postgres_reachable,
    redis_reachable,
    unavailable,
)
from tests.support.processes import COMMAND, clean_env, nice_of
from tests.support.signed_twilio import post_orders
from tests.support.twilio_server import FakeTwilio

# Serial: a `relaydesk serve` and a `relaydesk background` process.
pytestmark = pytest.mark.serial

TOKEN = "twilio-auth-token-for-tests"
ACCOUNT = "AC" + "e" * 32
BOT = "whatsapp:+14155238886"
PUBLIC_URL = "https://relay.example.org"


async def test_a_background_process_stores_and_answers_what_a_gateway_acknowledged(
    tmp_path: Path,
) -> None:
    for what, why in (
        ("PostgreSQL", await postgres_reachable()),
        ("Redis", await redis_reachable()),
    ):
        if why is not None:
            unavailable(what, why)
    twilio = FakeTwilio()
    twilio_server = TestServer(twilio.app())
    await twilio_server.start_server()
    url = await create_database()
    values = {
        "RELAYDESK_DATABASE_URL": url,
        "RELAYDESK_REDIS_URL": REDIS_URL,
        "RELAYDESK_RUN_COMPACTION": "false",
        "RELAYDESK_PUBLIC_URL": PUBLIC_URL,
        "RELAYDESK_LOG_LEVEL": "WARNING",
        "TWILIO_ACCOUNT_SID": ACCOUNT,
        "TWILIO_AUTH_TOKEN": TOKEN,
        "TWILIO_WHATSAPP_FROM": BOT,
        "TWILIO_API_BASE": str(twilio_server.make_url("")).rstrip("/"),
    }
    env = clean_env(**{k: v for k, v in values.items() if k.startswith("RELAYDESK_")})
    env.update({k: v for k, v in values.items() if k.startswith("TWILIO_")})
    log = (tmp_path / "background.log").open("w")
    process: subprocess.Popen[bytes] | None = None
    gateway: TestClient | None = None  # type: ignore[type-arg]
    try:
        migrated = subprocess.run(
            [*COMMAND, "migrate"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert migrated.returncode == 0, migrated.stderr
        process = subprocess.Popen(
            [*COMMAND, "background"], env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT
        )
        settings = Settings(**{**values, "RELAYDESK_RUN_BACKGROUND": False})  # type: ignore[arg-type]
        gateway = TestClient(TestServer(create_app(settings)))
        await gateway.start_server()

        sids = await post_orders(gateway, 3, account=ACCOUNT, token=TOKEN, public_url=PUBLIC_URL)

        async with asyncio.timeout(40):  # a start, a wake-up or at worst one 15 s sweep
            while len(twilio.created) < len(sids):
                assert process.poll() is None, (tmp_path / "background.log").read_text()
                await asyncio.sleep(0.1)
        async with gateway.app[SESSIONS]() as session:
            waiting = await session.scalar(select(func.count()).select_from(InboxMessage))
            stored = await session.scalar(
                select(func.count()).select_from(Message).where(Message.role == "user")
            )
        assert (waiting, stored) == (0, len(sids))
        stored_by_gateway = gateway.app[METRICS].registry.get_sample_value(
            "relaydesk_inbound_messages_total", {"channel": "whatsapp"}
        )
        assert not stored_by_gateway  # the gateway only acknowledged
        assert nice_of(process.pid) == 10

        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        code = await asyncio.to_thread(process.wait, 10)
        assert time.monotonic() - started < 10
        assert code == 0, (tmp_path / "background.log").read_text()
    finally:
        if gateway is not None:
            await gateway.close()
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        log.close()
        await twilio_server.close()
        await drop_database(url)

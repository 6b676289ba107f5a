"""`relaydesk compaction rebuild` (and `relaydesk worker`, built the same way) compacts with the
tenant's `summary_model` through the configured provider, like the gateway, and falls back to
the offline compactor when that model fails."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer
from sqlalchemy import select

from context import TiktokenCounter, load_encoding
from gateway.config import Settings
from gateway.memory.cli import rebuild
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.migrate import upgrade
from gateway.storage.models import CompactionTrace
from gateway.storage.repositories import facts, tenants
from tests.support.openai_server import FakeOpenAI
from tests.support.stored_conversations import store_episode

COUNTER = TiktokenCounter(load_encoding())
START = datetime(2026, 11, 2, 14, 0, tzinfo=UTC)
LINES = [
    ("user", "Oi, quero o reembolso do pedido PED-4471."),
    ("assistant", "Claro! Qual é a sua chave Pix?"),
    ("user", "Minha chave pix é ana.pix@example.org"),
    ("assistant", "Anotado, vou usar essa chave."),
]


@pytest.fixture
async def model() -> AsyncIterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    server = TestServer(fake.app())
    await server.start_server()
    yield fake, str(server.make_url("/v1"))
    await server.close()


async def _customer_with_history(database_url: str, summary_model: str) -> tuple[str, int]:
    """A closed WhatsApp episode; returns the customer id and the Pix message's id."""
    engine = make_engine(database_url)
    try:
        await upgrade(engine)
        async with make_sessionmaker(engine).begin() as session:
            await tenants.save_tenant_settings(
                session, domain=tenants.DEFAULT_DOMAIN, settings={"summary_model": summary_model}
            )
            stored = await store_episode(
                session, LINES, started_at=START, closed_at=START + timedelta(minutes=5)
            )
        return stored.customer_id, stored.message_ids[2]
    finally:
        await engine.dispose()


async def _traces_and_facts(database_url: str, customer_id: str) -> tuple[list[str], list[str]]:
    engine = make_engine(database_url)
    try:
        async with make_sessionmaker(engine)() as session:
            traces = await session.scalars(
                select(CompactionTrace.compactor)
                .where(CompactionTrace.customer_id == customer_id)
                .order_by(CompactionTrace.id)
            )
            current = await facts.current_facts(session, customer_id)
            return list(traces), [f"{f.key}={f.value}" for f in current]
    finally:
        await engine.dispose()


async def test_rebuild_uses_the_tenants_summary_model(
    tmp_path: Path, model: tuple[FakeOpenAI, str]
) -> None:
    fake, base_url = model
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    customer_id, pix_message = await _customer_with_history(database_url, "openai:summary-mini")
    fake.reply = json.dumps(
        {
            "facts": [
                {
                    "key": "pix_key",
                    "value": "ana.pix@example.org",
                    "scope": "payment",
                    "source_message_id": pix_message,
                    "confidence": 0.9,
                }
            ],
            "summary": "The customer asked for a refund and gave a Pix key.",
        }
    )
    settings = Settings(database_url=database_url, model_base_url=base_url)

    assert await rebuild(settings, customer_id) == 0

    assert [call.model for call in fake.calls] == ["summary-mini"]
    traces, current = await _traces_and_facts(database_url, customer_id)
    assert traces == ["llm"]
    assert "pix_key=ana.pix@example.org" in current


async def test_rebuild_falls_back_offline_when_the_summary_model_fails(
    tmp_path: Path, model: tuple[FakeOpenAI, str]
) -> None:
    fake, base_url = model
    fake.status = 500
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    customer_id, _ = await _customer_with_history(database_url, "openai:summary-mini")
    settings = Settings(database_url=database_url, model_base_url=base_url)

    assert await rebuild(settings, customer_id) == 0

    assert fake.calls  # the model was asked first
    traces, current = await _traces_and_facts(database_url, customer_id)
    assert traces == ["offline-fallback"]
    assert "pix_key=ana.pix@example.org" in current  # the offline extractor found it

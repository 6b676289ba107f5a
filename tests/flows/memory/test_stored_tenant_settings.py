"""Background work follows the tenant stored with the rows, not the domain's defaults:
retention deletes by each message's tenant (a host's `retention_days` reaches that host's
messages only), and the compaction worker compacts an episode with its tenant's thresholds."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from gateway.memory.queue import CompactionJob, InProcessQueue
from gateway.memory.retention import run_retention
from gateway.memory.worker import MemoryWorker
from gateway.runtime.clock import utcnow
from gateway.storage.models import Message
from gateway.storage.repositories import messages, tenants
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef
from tests.support.stack import Stack, running_stack
from tests.support.stored_conversations import COUNTER, store_episode

NOW = utcnow()
OLD = NOW - timedelta(days=40)
SHOP = TenantRef.for_host("shop.example.com")


@pytest.fixture(params=["embedded", "production"])
async def stack(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack(request.param, tmp_path) as running:
        yield running


async def _episode(
    stack: Stack, tenant: TenantRef, texts: Sequence[str], *, channel: str = "whatsapp"
) -> tuple[str, str, list[int]]:
    """A new customer's open episode of `tenant`, its messages written from `OLD` on."""
    lines = [("user" if index % 2 == 0 else "assistant", text) for index, text in enumerate(texts)]
    async with stack.sessions().begin() as session:
        stored = await store_episode(session, lines, started_at=OLD, channel=channel, tenant=tenant)
        written = [
            await messages.get_message(session, stored.customer_id, message_id)
            for message_id in stored.message_ids
        ]
    assert [message.tenant for message in written] == [tenant] * len(texts)
    return stored.customer_id, stored.episode_id, stored.message_ids


async def _remaining(stack: Stack, ids: Sequence[int]) -> set[int]:
    async with stack.sessions()() as session:
        return set(await session.scalars(select(Message.id).where(Message.id.in_(ids))))


async def test_retention_follows_each_messages_tenant(stack: Stack) -> None:
    texts = ["oi", "olá", "meu pedido?", "chega amanhã"]
    _, _, shop_ids = await _episode(stack, SHOP, texts)
    _, _, default_ids = await _episode(stack, DEFAULT_TENANT, texts)
    async with stack.sessions().begin() as session:
        await tenants.save_tenant_settings(
            session, domain="default", host=SHOP.host, settings={"retention_days": 30}
        )

    removed = await run_retention(stack.sessions(), now=NOW)

    assert removed["messages"] == len(shop_ids)
    assert await _remaining(stack, shop_ids) == set()
    # The domain keeps messages forever: those that came through no host stay.
    assert await _remaining(stack, default_ids) == set(default_ids)


async def test_the_worker_compacts_with_the_episodes_tenant_settings(stack: Stack) -> None:
    texts = [f"mensagem número {i} sobre o pedido de tênis" for i in range(16)]
    shop_customer, shop_episode, _ = await _episode(stack, SHOP, texts)
    default_customer, default_episode, _ = await _episode(stack, DEFAULT_TENANT, texts)
    async with stack.sessions().begin() as session:
        await tenants.save_tenant_settings(
            session,
            domain="default",
            host=SHOP.host,
            settings={"threshold_tokens": 40, "low_water_tokens": 20, "keep_recent_turns": 2},
        )
    worker = MemoryWorker(stack.sessions(), COUNTER, InProcessQueue())

    # The host's low threshold is passed: compacted. The domain's (3000 tokens) is not.
    shop = await worker.handle(CompactionJob(shop_customer, shop_episode))
    default = await worker.handle(CompactionJob(default_customer, default_episode))

    assert shop.compacted > 0
    assert default.compacted == 0

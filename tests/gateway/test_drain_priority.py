"""Under a burst of inbound messages the acknowledgements come first: answering waits while
webhooks pile up in the process, for a bounded time, and never stops."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, select

from gateway import pipeline as pipeline_module
from gateway.storage.models import TurnRow
from tests.support.stack import Stack, running_stack


async def _post(stack: Stack, visitor: str, text: str) -> None:
    response = await stack.client.post(
        "/webchat/messages",
        json={"visitor_id": visitor, "text": text, "client_message_id": uuid.uuid4().hex},
    )
    assert response.status == 202


async def _pending(stack: Stack) -> int:
    async with stack.sessions()() as session:
        return int(
            await session.scalar(
                select(func.count()).select_from(TurnRow).where(TurnRow.status == "pending")
            )
        )


async def test_answers_yield_to_a_burst_and_still_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline_module, "YIELD_MAX_S", 2.0)
    async with running_stack("embedded", tmp_path) as stack:
        pipeline = stack.pipeline
        loop = asyncio.get_running_loop()
        # Stand-ins for webhooks this process is accepting right now.
        burst = {
            ("whatsapp", f"SM-burst-{i}"): loop.create_future()
            for i in range(pipeline_module.YIELD_BACKLOG)
        }
        pipeline._inflight.update(burst)
        visitor = "v" + uuid.uuid4().hex
        started = time.monotonic()
        await _post(stack, visitor, "Meu pedido chegou?")
        await asyncio.sleep(0.3)
        assert await _pending(stack) == 1  # acknowledged, not answered yet
        async with asyncio.timeout(10):
            await stack.idle()
        assert await _pending(stack) == 0  # answered once the wait ran out
        assert time.monotonic() - started >= 2.0

        for key in burst:
            del pipeline._inflight[key]
        started = time.monotonic()
        await _post(stack, visitor, "E agora?")
        async with asyncio.timeout(10):
            await stack.idle()
        assert await _pending(stack) == 0
        assert time.monotonic() - started < 2.0  # nothing to yield to: answered at once


async def test_answers_wait_for_a_pause_in_provider_webhooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline_module, "YIELD_QUIET_S", 0.8)
    async with running_stack("embedded", tmp_path) as stack:
        visitor = "v" + uuid.uuid4().hex
        stack.pipeline.webhook_arrived()
        started = time.monotonic()
        await _post(stack, visitor, "Oi, tudo bem?")
        await asyncio.sleep(0.3)
        assert await _pending(stack) == 1  # a webhook just came in: the answer waits
        async with asyncio.timeout(10):
            await stack.idle()
        assert await _pending(stack) == 0
        assert time.monotonic() - started >= 0.8

"""Under a burst of inbound messages the acknowledgements come first: answering waits while
webhooks pile up in the process, for a bounded time, and never stops."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, select

from gateway.storage.models import TurnRow
from tests.support.stack import Stack, running_stack
from tests.support.webchat import signed_visitor

# Serial: it times how long answering waits for a burst (under 2 s).
pytestmark = pytest.mark.serial


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


async def test_answers_yield_to_a_burst_and_still_come(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        backpressure = stack.backpressure
        backpressure.max_wait_s = 2.0
        visitor = await signed_visitor(stack.client)
        await _post(stack, visitor, "Oi")  # a first answer: the conversation exists
        await stack.idle()
        # Stand-ins for webhooks this process is acknowledging right now.
        backpressure.ingesting += backpressure.backlog
        started = time.monotonic()
        await _post(stack, visitor, "Meu pedido chegou?")
        await asyncio.sleep(0.3)
        assert await _pending(stack) == 1  # acknowledged, not answered yet
        async with asyncio.timeout(10):
            await stack.idle()
        assert await _pending(stack) == 0  # answered once the wait ran out
        assert time.monotonic() - started >= 2.0

        backpressure.ingesting -= backpressure.backlog
        started = time.monotonic()
        await _post(stack, visitor, "E agora?")
        async with asyncio.timeout(10):
            await stack.idle()
        assert await _pending(stack) == 0
        assert time.monotonic() - started < 2.0  # nothing to yield to: answered at once


async def test_answers_keep_pace_with_a_steady_trickle_of_requests(tmp_path: Path) -> None:
    """Requests one at a time (never two acknowledgements at once) do not hold answers back:
    only a pile-up does."""
    async with running_stack("embedded", tmp_path) as stack:
        visitor = await signed_visitor(stack.client)
        started = time.monotonic()
        for i in range(10):
            await _post(stack, visitor, f"mensagem {i}")
            await asyncio.sleep(0.02)
        async with asyncio.timeout(10):
            await stack.idle()
        assert await _pending(stack) == 0
        assert time.monotonic() - started < 2.0

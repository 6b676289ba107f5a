"""The inbox processor's wake-ups: a kick is never lost, whenever it comes."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import async_sessionmaker

from channels.base import InboundMessage
from gateway.inbox.codec import to_payload
from gateway.inbox.processor import InboxProcessor
from gateway.runtime.clock import utcnow
from gateway.runtime.tasks import TaskOwner
from gateway.storage.models import InboxMessage
from gateway.storage.repositories import inbox
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef
from gateway.turns.accept import Accepted
from tests.conftest import DatabaseUnderTest

T = TypeVar("T")


class KickAtTheEnd(TaskOwner):
    """Spawns as the flow's owner does, and calls `at_the_end` once the first task spawned has
    finished, before anything else its end triggers: the moment a wake-up can fall between
    the processor's last look for work and the end of its task."""

    def __init__(self) -> None:
        super().__init__()
        self.at_the_end: Any = None

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
        task = asyncio.create_task(coro, name=name)
        if self.at_the_end is not None:
            hook, self.at_the_end = self.at_the_end, None
            task.add_done_callback(lambda _: hook())
        self._running.add(task)
        task.add_done_callback(self._ended)
        return task


def _message(number: int) -> InboundMessage:
    return InboundMessage(
        channel="whatsapp",
        provider_message_id=f"SM-kick-{number}",
        sender="whatsapp:+5511999990000",
        text=f"mensagem {number}",
        received_at=utcnow(),
    )


async def test_a_kick_as_the_processor_finishes_is_not_lost(database: DatabaseUnderTest) -> None:
    engine = database.engine()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    stored: list[str] = []

    async def accept(message: InboundMessage, tenant: TenantRef) -> Accepted:
        stored.append(message.provider_message_id)
        if len(stored) == 1:
            await commit(2)  # a gateway's row, after this claim: its wake-up comes later
        return Accepted(len(stored), "customer", False, "customer:whatsapp")

    async def commit(number: int) -> None:
        message = _message(number)
        async with sessions.begin() as session:
            await inbox.add(
                session,
                [
                    inbox.inbox_row(
                        channel=message.channel,
                        provider_message_id=message.provider_message_id,
                        thread_key=f"whatsapp:{message.sender}",
                        tenant=DEFAULT_TENANT,
                        payload=to_payload(message),
                        received_at=message.received_at,
                    )
                ],
            )

    owner = KickAtTheEnd()
    processor = InboxProcessor(sessions, accept, stored=lambda key: None, owner=owner)
    try:
        await commit(1)
        owner.at_the_end = processor.kick  # the wake-up of the second row, just then
        processor.kick()
        await processor.idle()
        assert stored == ["SM-kick-1", "SM-kick-2"]  # not left for the sweep
        async with sessions() as session:
            assert await session.scalar(select(func.count()).select_from(InboxMessage)) == 0
    finally:
        await processor.close()
        await owner.close()
        await engine.dispose()

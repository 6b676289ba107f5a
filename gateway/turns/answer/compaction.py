"""The compaction trigger after a turn: a job queued once the episode's unsummarized tokens
pass the tenant's high-water mark (`threshold_tokens`); the worker compacts down to the
low-water mark (hysteresis)."""

from __future__ import annotations

from gateway.memory.queue import CompactionJob, CompactionQueue
from gateway.storage.records import MessageRecord, TurnRecord
from gateway.storage.repositories import messages, summaries
from gateway.tenants import TenantSettings
from gateway.turns.answer.deps import AnswerDeps


def passes_high_water(unsummarized_tokens: int, tenant: TenantSettings) -> bool:
    return unsummarized_tokens > tenant.threshold_tokens


def kept_tokens(*stored: MessageRecord) -> int:
    """The tokens of the messages memory keeps (canned texts are left out)."""
    return sum(m.token_count for m in stored if not m.meta.canned)


class CompactionTrigger:
    def __init__(self, deps: AnswerDeps, memory: CompactionQueue | None) -> None:
        self._deps = deps
        self._memory = memory

    async def after_reply(
        self,
        turn: TurnRecord,
        tenant: TenantSettings,
        window_tokens: int | None,
        inbound: MessageRecord,
        reply: MessageRecord,
    ) -> None:
        """`window_tokens`: the episode's unsummarized tokens the window read (None when it
        did not read them all); this turn's two messages are added to them."""
        if window_tokens is None:
            await self.after_turn(turn, tenant)
        else:
            await self._compact_past(turn, tenant, window_tokens + kept_tokens(inbound, reply))

    async def after_turn(self, turn: TurnRecord, tenant: TenantSettings) -> None:
        """With the episode's unsummarized tokens read from storage."""
        if self._memory is None:
            return
        async with self._deps.work, self._deps.sessions() as session:
            summary = await summaries.episode_summary(session, turn.customer_id, turn.episode_id)
            pending = await messages.unsummarized_tokens(
                session,
                turn.customer_id,
                turn.episode_id,
                summary.last_message_id if summary else None,
            )
        await self._compact_past(turn, tenant, pending)

    async def _compact_past(self, turn: TurnRecord, tenant: TenantSettings, pending: int) -> None:
        if self._memory is not None and passes_high_water(pending, tenant):
            await self._memory.enqueue(CompactionJob(turn.customer_id, turn.episode_id))

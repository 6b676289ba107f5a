"""The summary model's facts of each customer message, found while its turn is answered.

For a tenant whose `summary_model` builds a model compactor, the answer step `start`s one
extraction per customer message (`llm_message_facts`) beside its window assembly and model
call, so the reply never waits for it; the offline facts of the message are already stored by
then. Before the conversation's next turn is answered, and before the answer step lets go of
the conversation, it `settle`s the conversation's extraction: the next window, whoever answers
it, shows those facts, and a conversation's facts are stored in the order of its messages (a
later value supersedes an earlier one).

The call is admitted by the answer step's `ModelGate` (tenant, provider and process limits). An
unusable answer, a failed call or refused facts are logged and change nothing else: a failure
here never fails the turn.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.memory.llm_answers import UnusableAnswer, describe
from gateway.memory.llm_compactor import CompactorFactory
from gateway.memory.llm_message_facts import LLMMessageFacts
from gateway.memory.service import source_message, store_facts
from gateway.providers import ProviderError
from gateway.providers.limits import CallLimits, ModelGate
from gateway.runtime.tasks import TaskOwner
from gateway.storage.records import MessageRecord
from gateway.tenants import TenantSettings

__all__ = ["BackgroundFacts"]

log = logging.getLogger("relaydesk.memory")


class BackgroundFacts:
    """Per conversation, the extraction of its latest customer message, if one is running."""

    def __init__(
        self,
        *,
        sessions: async_sessionmaker[AsyncSession],
        extractor_for: CompactorFactory | None,
        gate: ModelGate,
        work: asyncio.Semaphore,
        owner: TaskOwner | None = None,
    ) -> None:
        self.sessions = sessions
        self._owner = owner if owner is not None else TaskOwner()
        self.extractor_for = extractor_for
        self.gate = gate
        self.work = work  # the answer step's slots for database work
        self._running: dict[str, asyncio.Task[None]] = {}

    def start(self, key: str, tenant: TenantSettings, message: MessageRecord, text: str) -> None:
        """Extract the facts of ``message`` (``text``: what it says, transcribed for a voice
        note) in the background, if the tenant has a summary model."""
        if message.role != "user" or message.meta.canned or not text.strip():
            return
        extractor = self._extractor(tenant)
        if extractor is None:
            return
        limits = CallLimits(
            in_flight=tenant.model_max_in_flight, per_minute=tenant.model_requests_per_minute
        )
        previous = self._running.get(key)
        task = self._owner.spawn(
            self._extract(previous, extractor, limits, message, text),
            name=f"message-facts:{message.id}",
        )
        self._running[key] = task

        def forget(done: asyncio.Task[None]) -> None:
            if self._running.get(key) is done:
                del self._running[key]

        task.add_done_callback(forget)

    def running(self, key: str) -> bool:
        """Whether the conversation has an extraction not yet stored."""
        task = self._running.get(key)
        return task is not None and not task.done()

    async def settle(self, key: str) -> None:
        """Wait until the conversation's extraction (if any) has stored its facts. A caller
        being cancelled (a shutdown) cancels the extraction instead: the message's offline
        facts are stored, and compaction reads it again."""
        task = self._running.get(key)
        if task is None:
            return
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            task.cancel()
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            raise

    def _extractor(self, tenant: TenantSettings) -> LLMMessageFacts | None:
        if self.extractor_for is None:
            return None
        try:
            compactor = self.extractor_for(tenant)
        except ValueError as error:  # ProviderConfigError: an unusable summary model
            log.warning(
                "summary model unusable, offline facts only",
                extra={"fields": {"summary_model": tenant.summary_model, "error": str(error)}},
            )
            return None
        return LLMMessageFacts(compactor.provider) if compactor is not None else None

    async def _extract(
        self,
        previous: asyncio.Task[None] | None,
        extractor: LLMMessageFacts,
        limits: CallLimits,
        message: MessageRecord,
        text: str,
    ) -> None:
        fields: dict[str, object] = {"message": message.id, "model": extractor.provider.model}
        try:
            source = replace(source_message(message), text=text)
            # Keyed by the tenant the message came through: its limits are its own.
            async with self.gate.admit(extractor.provider_key, message.tenant.encode(), limits):
                found = await extractor.run(source)
            if found.refused:
                refused = [f"{fact.key}: {why}" for fact, why in found.refused]
                log.warning("model facts refused", extra={"fields": {**fields, "refused": refused}})
            if previous is not None:  # the conversation's earlier message is stored first
                await asyncio.wait({previous})
            if not found.accepted:
                return
            async with self.work, self.sessions.begin() as session:
                written = await store_facts(
                    session, message.customer_id, found.accepted, {message.id: message}
                )
            log.info("model facts stored", extra={"fields": {**fields, "facts": written}})
        except UnusableAnswer as error:
            log.warning(
                "model facts not extracted",
                extra={"fields": {**fields, "reason": error.reason, "error": describe(error)}},
            )
        except ProviderError as error:
            log.warning(
                "model facts not extracted",
                extra={"fields": {**fields, "reason": "call_failed", "error": describe(error)}},
            )
        except Exception:
            # Never the turn's failure: the offline facts of the message are stored already.
            log.exception("model facts not extracted", extra={"fields": fields})

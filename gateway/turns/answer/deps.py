"""What the answer step's parts share: storage, the token counter, the tenant settings, the
channels, the work slots and the model gate."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Channel
from context import TokenCounter
from gateway.events.outbox import EventOutbox
from gateway.providers.limits import ModelGate
from gateway.storage.engine import read_sessions
from gateway.storage.repositories import tenants

# Steps that use the CPU and the database at once in a process (a model wait holds none).
WORK_SLOTS = 4


@dataclass(frozen=True, slots=True)
class AnswerDeps:
    """`work`: the slots a step takes while it uses the CPU or the database (one semaphore for
    the whole answer step, so a model wait never holds one); `reads`: sessions for reads alone
    (`read_sessions`), the window's and the drain's checks."""

    sessions: async_sessionmaker[AsyncSession]
    reads: async_sessionmaker[AsyncSession]
    counter: TokenCounter
    tenant_cache: tenants.SettingsCache
    adapters: Mapping[str, Channel]
    work: asyncio.Semaphore
    gate: ModelGate
    events: EventOutbox | None = None

    @classmethod
    def of(
        cls,
        *,
        sessions: async_sessionmaker[AsyncSession],
        counter: TokenCounter,
        tenant_cache: tenants.SettingsCache,
        adapters: Mapping[str, Channel],
        work_slots: int = WORK_SLOTS,
        gate: ModelGate | None = None,
        events: EventOutbox | None = None,
    ) -> AnswerDeps:
        return cls(
            sessions=sessions,
            reads=read_sessions(sessions),
            counter=counter,
            tenant_cache=tenant_cache,
            adapters=adapters,
            work=asyncio.Semaphore(work_slots),
            gate=gate or ModelGate(),
            events=events,
        )

"""A lot of inbound messages written in the caller's transaction, a few statements per kind
of row (inserts in chunks of powers of two, `bound_lists.in_bounded_shapes`): the erased
ones among them (a live erasure tombstone) and the stored ones found at once, then for the
others the identity graph rows
and open episodes read at once, the messages inserted together, the conversations noted
together, the pending turns inserted together and each episode updated once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from context import TokenCounter
from gateway.config import Settings
from gateway.customers.evidence import EvidenceRule
from gateway.customers.resolve import ResolvedIdentity, resolve_identities
from gateway.events.outbox import EventOutbox
from gateway.runtime.clock import utcnow
from gateway.runtime.metrics import Metrics
from gateway.storage.records import NewMessage, NewTurn
from gateway.storage.repositories import (
    conversations,
    episodes,
    erasure_tombstones,
    messages,
    tenants,
    turns,
)
from gateway.tenants import TenantSettings
from gateway.turns.accept.accepted import (
    Accepted,
    MessageErased,
    already_stored,
    conversation_key,
)
from gateway.turns.accept.arrival import Arrival
from gateway.turns.accept.codes import CodeCheck
from gateway.turns.accept.episode_choice import episode_for
from gateway.turns.accept.message_rows import latest_version, message_seen, new_message
from gateway.turns.accept.observation import Observer
from gateway.turns.accept.profile_names import ProfileNames
from gateway.turns.handoff import message_created


@dataclass(frozen=True, slots=True)
class _Prepared:
    """The rows of a lot's new messages, before they are written."""

    messages: tuple[NewMessage, ...]
    identities: tuple[ResolvedIdentity, ...]
    closed: tuple[str | None, ...]  # per message: the idle episode it closed
    added: Mapping[str, tuple[datetime, int]]  # per episode: newest message time, tokens


class LotWriter:
    def __init__(
        self,
        *,
        settings: Settings,
        counter: TokenCounter,
        evidence: Mapping[str, EvidenceRule],
        tenant_cache: tenants.SettingsCache,
        events: EventOutbox | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._observer = Observer(settings, evidence)
        self._codes = CodeCheck(events=events, metrics=metrics)
        self._counter = counter
        self._tenant_cache = tenant_cache
        self._events = events
        self._profile_names = ProfileNames()

    async def write(
        self, session: AsyncSession, lot: Sequence[Arrival], *, find_stored: bool
    ) -> list[Accepted | MessageErased]:
        """Store `lot` (no two with the same key) in arrival order, one outcome each: what was
        stored (or had been), or `MessageErased` for a message erased before, which is not.

        `find_stored`: look for stored ones first. Without it a stored one makes the insert
        raise `IntegrityError`, which spoils the transaction. An edit is written after the
        rows it may replace were committed: one in a lot with its original would miss it."""
        keys = [a.key for a in lot]
        # Its dedupe key went with the erasure: only the tombstone tells a late retry apart.
        erased = await erasure_tombstones.erased_among(session, keys, now=utcnow())
        known = await messages.find_by_provider_ids(session, keys) if find_stored else {}
        fresh = [a for a in lot if a.key not in known and a.key not in erased]
        written = iter(await self._write_fresh(session, fresh) if fresh else [])
        outcomes: list[Accepted | MessageErased] = []
        for arrival in lot:
            if arrival.key in known:
                outcomes.append(already_stored(known[arrival.key]))
            elif arrival.key in erased:
                outcomes.append(_erased(arrival))
            else:
                outcomes.append(next(written))
        return outcomes

    async def _write_fresh(self, session: AsyncSession, lot: Sequence[Arrival]) -> list[Accepted]:
        prepared = await self._prepare(session, lot)
        stored = await messages.append_messages(session, prepared.messages)
        keys = [conversation_key(m.customer_id, m.channel) for m in stored]
        # One statement for the lot's conversations (created on their first message).
        noted = await conversations.note_messages(
            session,
            (
                message_seen(key, message, identity)
                for key, message, identity in zip(keys, stored, prepared.identities, strict=True)
            ),
        )
        for key, message in zip(keys, stored, strict=True):
            await message_created(session, self._events, noted[key], message)
        await turns.create_turns(
            session,
            [
                NewTurn(message.id, message.customer_id, message.episode_id, key, message.tenant)
                for message, key, arrival in zip(stored, keys, lot, strict=True)
                # An edit is kept as history, not answered as a new question.
                if arrival.inbound.kind != "edit"
            ],
        )
        # Last, so the episode rows (every message of a conversation updates its episode)
        # stay locked only until the commit that follows.
        await episodes.record_messages(session, prepared.added)
        return [
            Accepted(message.id, message.customer_id, False, key, closed)
            for message, key, closed in zip(stored, keys, prepared.closed, strict=True)
        ]

    async def _prepare(self, session: AsyncSession, lot: Sequence[Arrival]) -> _Prepared:
        """Each message's identity resolved and episode chosen, in arrival order."""
        settings = [await self._tenant_of(session, arrival) for arrival in lot]
        observed = [
            self._observer.observe(arrival.inbound, tenant)
            for arrival, tenant in zip(lot, settings, strict=True)
        ]
        identities = await resolve_identities(session, observed)
        # A step-up code typed back: checked, and taken out of the text, before storing.
        checked = [
            await self._codes.check(session, arrival.inbound, identity, rules)
            for arrival, identity, (_, rules) in zip(lot, identities, observed, strict=True)
        ]
        identities = [one.identity for one in checked]
        # The channel's profile name (WhatsApp's ProfileName, Telegram's first and last name),
        # kept on the identity so the console can name the customer before they state a name.
        await self._profile_names.note(
            session,
            {
                identity.identity_id: arrival.inbound.sender_name
                for arrival, identity in zip(lot, identities, strict=True)
                if arrival.inbound.sender_name
            },
        )
        opened = await episodes.latest_open_episodes(
            session,
            {
                (identity.customer_id, arrival.inbound.channel, identity.identity_id)
                for arrival, identity in zip(lot, identities, strict=True)
            },
        )
        new_messages: list[NewMessage] = []
        closed: list[str | None] = []
        added: dict[str, tuple[datetime, int]] = {}
        for arrival, identity, tenant, code in zip(lot, identities, settings, checked, strict=True):
            inbound = code.inbound
            conversation = (identity.customer_id, inbound.channel, identity.identity_id)
            episode, closed_id = await episode_for(
                session, opened.get(conversation), inbound, identity, tenant, arrival.tenant
            )
            supersedes_id = None
            if inbound.edit_of is not None:
                supersedes_id = await latest_version(session, arrival.thread, inbound.edit_of)
            new = new_message(
                inbound,
                identity,
                episode_id=episode.id,
                thread=arrival.thread,
                supersedes_id=supersedes_id,
                counter=self._counter,
                tenant=arrival.tenant,
                verification=code.attempt.value if code.attempt is not None else None,
                trace=arrival.trace,
            )
            # Later messages of the conversation see this one's time, as after its commit.
            opened[conversation] = replace(
                episode, last_message_at=max(episode.last_message_at, inbound.received_at)
            )
            at, tokens = added.get(episode.id, (inbound.received_at, 0))
            added[episode.id] = (max(at, inbound.received_at), tokens + new.token_count)
            new_messages.append(new)
            closed.append(closed_id)
        return _Prepared(tuple(new_messages), tuple(identities), tuple(closed), added)

    async def _tenant_of(self, session: AsyncSession, arrival: Arrival) -> TenantSettings:
        return await self._tenant_cache.for_tenant(
            session, arrival.tenant, channel=arrival.inbound.channel
        )


def _erased(arrival: Arrival) -> MessageErased:
    channel, provider_id = arrival.key
    return MessageErased(f"{channel} message {provider_id} was erased; it is not stored again")

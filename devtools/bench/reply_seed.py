"""Customers for ``relaydesk bench reply``: long histories whose open WhatsApp episode sits just
under the compaction threshold, written as if the customer had been talking a minute ago.

The histories are those of ``relaydesk bench context`` (`devtools.bench.history`: about 600 messages
over eight episodes on four channels, summaries and facts), stored by the same `populate`.
Every timestamp is moved so that the open episode's last message is a minute old — an older one
would be closed as idle by the first new message. The open episode is summarized as far as
compaction would have gone with a trigger of `SEED_THRESHOLD` tokens, which leaves about
2,940-2,990 unsummarized tokens: the customer's first messages of the run cross the tenant's
threshold (3,000; the offline model's canned replies do not count), so compaction jobs start at
once. `twins` gives the
same histories other identities, so both sides of the comparison can live in one database.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from devtools.bench.history import SyntheticHistory, count_tokens, make_history
from devtools.bench.populate import populate
from gateway.runtime.clock import utcnow
from gateway.tenants import TenantSettings

HISTORY_SIZE = 600
SEED_THRESHOLD = 2_990
SEED_LOW_WATER = 2_940
LAST_MESSAGE_AGE = timedelta(minutes=1)
TWIN_OFFSET = 1_000_000


@dataclass(frozen=True, slots=True)
class Customer:
    history: SyntheticHistory
    tokens: tuple[tuple[int, ...], ...]

    @property
    def phone(self) -> str:
        """E.164; the WhatsApp sender of the open episode."""
        return self.history.phone


def make_customers(count: int, counter: TokenCounter) -> list[Customer]:
    """``count`` distinct customers (the same ones on every call), each with an open episode
    long enough to be summarized up to `SEED_THRESHOLD`."""
    customers: list[Customer] = []
    taken: set[str] = set()
    # One size per customer: `populate` names the stored messages after the size.
    size = HISTORY_SIZE
    while len(customers) < count:
        size += 1
        history = make_history(size)
        # The open episode must pass the trigger (a third of the histories do).
        if sum(counter.count(m.text) for m in history.episodes[-1].messages) <= SEED_THRESHOLD:
            continue
        keys = {
            f"phone:{history.phone}",
            f"telegram:{history.telegram_user}",
            f"web:{history.web_account}",
        }
        if keys & taken:  # identities are unique across customers
            continue
        taken |= keys
        customers.append(Customer(history, count_tokens(history, counter)))
    return customers


def twins(customers: list[Customer]) -> list[Customer]:
    """The same histories under other identities (another WhatsApp number, Telegram user and
    web account), to be stored beside the originals as other customers."""
    return [
        Customer(
            replace(
                customer.history,
                # `populate` names the stored messages after the size: keep the twins' apart.
                size=customer.history.size + TWIN_OFFSET,
                phone="+55219" + customer.history.phone[-8:],  # originals are +55119…
                telegram_user=customer.history.telegram_user + TWIN_OFFSET * 1_000,
                web_account=f"{customer.history.web_account}-twin",
            ),
            customer.tokens,
        )
        for customer in customers
    ]


def recent(history: SyntheticHistory, now: datetime) -> SyntheticHistory:
    """``history`` moved in time so that its last message was sent `LAST_MESSAGE_AGE` ago."""
    shift = now - LAST_MESSAGE_AGE - history.episodes[-1].last_message_at
    episodes = tuple(
        replace(
            episode,
            messages=tuple(replace(m, created_at=m.created_at + shift) for m in episode.messages),
        )
        for episode in history.episodes
    )
    return replace(history, episodes=episodes)


async def seed(
    sessions: async_sessionmaker[AsyncSession],
    customers: list[Customer],
    counter: TokenCounter,
) -> list[str]:
    """Store ``customers`` in a migrated database; returns their customer ids."""
    settings = TenantSettings(threshold_tokens=SEED_THRESHOLD, low_water_tokens=SEED_LOW_WATER)
    now = utcnow()
    ids = []
    for customer in customers:
        seeded = await populate(
            sessions, recent(customer.history, now), customer.tokens, settings, counter
        )
        ids.append(seeded.identity.customer_id)
    return ids


async def unsummarized_tokens(
    sessions: async_sessionmaker[AsyncSession], customer_ids: Collection[str]
) -> int:
    """Tokens of the customers' open-episode messages that no summary covers yet."""
    query = text(
        "SELECT coalesce(sum(m.token_count), 0) FROM messages m "
        "JOIN episodes e ON e.id = m.episode_id "
        "LEFT JOIN episode_summaries s ON s.episode_id = e.id "
        "WHERE e.status = 'open' AND m.id > coalesce(s.last_message_id, 0) "
        "AND e.customer_id IN :ids"
    ).bindparams(bindparam("ids", expanding=True))
    async with sessions() as session:
        total = await session.scalar(query, {"ids": list(customer_ids)})
    return int(total or 0)

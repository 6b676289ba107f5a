"""Deterministic synthetic customer histories for the context benchmark.

One customer per size: ``size`` messages spread over several episodes (4 per order of magnitude:
8 at 100 messages, 12 at 1k, 16 at 10k, 20 at 100k) that rotate over telegram, web chat, phone
and WhatsApp, in Portuguese and English, about orders, payments, deliveries and returns. The last
episode is the open WhatsApp conversation the benchmark asks about. Every closed episode has a
summary; the open one has the summary compaction would have left (`compaction_pointer`), and the
customer has current facts (one of them superseded once per episode) with their source messages.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from context import TokenCounter
from devtools.bench import phrases

CHANNEL_CYCLE = ("telegram", "webchat", "phone", "whatsapp")
CURRENT_CHANNEL = "whatsapp"
_EPOCH = datetime(2024, 1, 8, 9, 0, tzinfo=UTC)

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class SyntheticMessage:
    role: Role
    text: str
    created_at: datetime
    confidence: float | None = None  # speech-recognition confidence of phone transcripts


@dataclass(frozen=True, slots=True)
class SyntheticEpisode:
    channel: str
    language: str
    messages: tuple[SyntheticMessage, ...]
    summary: str
    is_open: bool

    @property
    def started_at(self) -> datetime:
        return self.messages[0].created_at

    @property
    def last_message_at(self) -> datetime:
        return self.messages[-1].created_at

    @property
    def confidence(self) -> float | None:
        values = [m.confidence for m in self.messages if m.confidence is not None]
        return round(sum(values) / len(values), 2) if values else None


@dataclass(frozen=True, slots=True)
class SyntheticFact:
    """A fact learned from message ``message`` of episode ``episode`` (indices)."""

    key: str
    value: str
    scope: str
    episode: int
    message: int
    tags: tuple[str, ...] = ()
    confirmed: bool = False
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class SyntheticHistory:
    size: int
    phone: str  # E.164; the WhatsApp sender of the open episode
    telegram_user: int
    web_account: str
    episodes: tuple[SyntheticEpisode, ...]
    facts: tuple[SyntheticFact, ...]

    @property
    def whatsapp_external_id(self) -> str:
        return f"whatsapp:{self.phone}"

    def turns(self) -> Iterator[tuple[Role, str]]:
        """Every stored message, oldest first, as (role, text)."""
        for episode in self.episodes:
            for message in episode.messages:
                yield message.role, message.text


def episode_count(size: int) -> int:
    """Several episodes, more for longer histories: 4 per order of magnitude above 10."""
    return max(1, min(4 * max(1, len(str(size)) - 1), size // 2))


def make_history(size: int, seed: int = 20240108) -> SyntheticHistory:
    """The synthetic history of one customer with exactly ``size`` messages (``size >= 2``)."""
    if size < 2:
        raise ValueError("a history needs at least 2 messages")
    rng = random.Random(f"relaydesk-bench:{seed}:{size}")
    count = episode_count(size)
    weights = [rng.uniform(0.5, 1.5) for _ in range(count)]
    lengths = [max(2, int(size * w / sum(weights))) for w in weights]
    lengths[-1] += size - sum(lengths)
    while lengths[-1] < 2:  # rounding took too much from the open episode
        donor = max(range(count - 1), key=lengths.__getitem__)
        lengths[donor] -= 1
        lengths[-1] += 1
    customer = _customer_values(rng)
    episodes: list[SyntheticEpisode] = []
    at = _EPOCH
    for index, length in enumerate(lengths):
        is_open = index == count - 1
        channel = CURRENT_CHANNEL if is_open else CHANNEL_CYCLE[index % len(CHANNEL_CYCLE)]
        episode = _episode(rng, channel, length, at, customer, is_open=is_open)
        episodes.append(episode)
        at = episode.last_message_at + timedelta(days=rng.randint(1, 20), hours=rng.randint(0, 8))
    return SyntheticHistory(
        size=size,
        phone=customer["phone"],
        telegram_user=int(customer["telegram"]),
        web_account=customer["web_account"],
        episodes=tuple(episodes),
        facts=_facts(episodes, customer),
    )


def count_tokens(history: SyntheticHistory, counter: TokenCounter) -> tuple[tuple[int, ...], ...]:
    """Token count of every message, per episode, as ingest stores it (content only)."""
    return tuple(
        tuple(counter.count(message.text) for message in episode.messages)
        for episode in history.episodes
    )


def compaction_pointer(
    tokens: Sequence[int], *, threshold: int, low_water: int, keep_recent: int
) -> int | None:
    """Replay the compaction trigger over an episode as its messages arrive.

    Whenever the unsummarized tokens exceed ``threshold``, the summary absorbs the oldest
    unsummarized messages until the rest is under ``low_water``, always leaving at least
    ``keep_recent`` messages. Returns the index of the last summarized message, or None when
    the episode never crossed the threshold.
    """
    pointer = -1
    unsummarized = 0
    for index, count in enumerate(tokens):
        unsummarized += count
        if unsummarized > threshold:
            while unsummarized >= low_water and index - pointer > keep_recent:
                pointer += 1
                unsummarized -= tokens[pointer]
    return pointer if pointer >= 0 else None


def _customer_values(rng: random.Random) -> dict[str, str]:
    street = rng.choice(phrases.STREETS)
    return {
        "phone": f"+55119{rng.randint(81_000_000, 99_999_999)}",
        "telegram": str(rng.randint(100_000_000, 999_999_999)),
        "web_account": f"acct-{rng.randint(10_000, 99_999)}",
        "name": rng.choice(("Ana", "Bruna", "Carla", "Daniel", "Eduardo", "Fernanda")),
        "email": f"cliente{rng.randint(100, 999)}@example.com.br",
        "pix": f"pix.{rng.randint(1000, 9999)}@example.com.br",
        "card": f"{rng.randint(1000, 9999)}",
        "cep": f"{rng.randint(1000, 9999):05d}-{rng.randint(0, 999):03d}",
        "street": street,
        "number": str(rng.randint(10, 2999)),
    }


def _episode_values(rng: random.Random, customer: dict[str, str]) -> dict[str, Any]:
    return {
        **customer,
        "order": f"PED-{rng.randint(10_000, 99_999)}",
        "tracking": f"BR{rng.randint(100_000_000, 999_999_999)}BR",
        "item": rng.choice(phrases.ITEMS),
        "amount": f"R$ {rng.randint(39, 1899)},{rng.choice(('00', '90', '99', '50'))}",
        "method": rng.choice(phrases.METHODS),
    }


def _fill(template: str, values: dict[str, Any], rng: random.Random) -> str:
    return template.format(
        **values,
        days=rng.randint(2, 15),
        weekday=rng.choice(phrases.WEEKDAYS_PT),
        weekday_en=rng.choice(phrases.WEEKDAYS_EN),
        date=f"{rng.randint(1, 28):02d}/{rng.randint(1, 12):02d}",
        hour=f"{rng.randint(8, 21)}h{rng.randint(0, 59):02d}",
    )


def _episode(
    rng: random.Random,
    channel: str,
    length: int,
    start: datetime,
    customer: dict[str, str],
    *,
    is_open: bool,
) -> SyntheticEpisode:
    language = "pt" if rng.random() < 0.7 else "en"
    values = _episode_values(rng, customer)
    transcript = channel == "phone"
    messages: list[SyntheticMessage] = []
    at = start
    topic = rng.choice(phrases.TOPICS)
    role: Role = "user"
    for index in range(length):
        if index and rng.random() < 0.12:
            topic = rng.choice(phrases.TOPICS)
        pool = (phrases.USER if role == "user" else phrases.ASSISTANT)[language][topic]
        text = _fill(rng.choice(pool), values, rng)
        if role == "assistant":
            extra = rng.choice((0, 1, 1, 2))
            text = " ".join((text, *rng.sample(phrases.FOLLOW_UPS[language], k=extra)))
        confidence = None
        if transcript:
            text = rng.choice(phrases.PHONE_FILLERS) + text[0].lower() + text[1:]
            confidence = round(rng.uniform(0.55, 0.97), 2)
        messages.append(SyntheticMessage(role, text, at, confidence))
        at += timedelta(seconds=rng.randint(15, 240))
        # Mostly alternating; now and then the customer sends two messages in a row.
        role = "user" if role == "assistant" or rng.random() < 0.1 else "assistant"
    sentences = rng.sample(phrases.SUMMARY[language], k=min(3, len(phrases.SUMMARY[language])))
    summary = " ".join(_fill(s, values, rng) for s in sentences)
    return SyntheticEpisode(channel, language, tuple(messages), summary, is_open)


def _facts(
    episodes: Sequence[SyntheticEpisode], customer: dict[str, str]
) -> tuple[SyntheticFact, ...]:
    def first_user(episode: int) -> int:
        roles = [m.role for m in episodes[episode].messages]
        return roles.index("user") if "user" in roles else 0

    def typed(episode: int) -> bool:
        return episodes[episode].channel != "phone"

    last = len(episodes) - 1
    profile = [
        ("preferred_name", customer["name"], "profile", ("name",), False),
        ("preferred_language", "pt-BR", "public", (), False),
        ("email", customer["email"], "account", ("contact",), False),
        ("postal_code", customer["cep"], "account", ("delivery",), False),
        (
            "delivery_address",
            f"{customer['street']}, {customer['number']}",
            "account",
            ("delivery",),
            False,
        ),
        ("pix_key", customer["pix"], "payment", ("payment",), False),
        ("card_last4", customer["card"], "payment", ("payment",), False),
        ("contact_preference", "WhatsApp, depois das 18h", "profile", ("preference",), False),
        ("no_calls_before", "não ligar antes das 9h", "profile", ("rule",), True),
    ]
    facts: list[SyntheticFact] = []
    for position, (key, value, scope, tags, pinned) in enumerate(profile):
        episode = min(position // 3, last)
        facts.append(
            SyntheticFact(
                key, value, scope, episode, first_user(episode), tags, typed(episode), pinned
            )
        )
    orders: list[SyntheticFact] = []
    for episode, item in enumerate(episodes):
        found = next((i for i, m in enumerate(item.messages) if "PED-" in m.text), None)
        if found is None:
            continue
        value = "PED-" + item.messages[found].text.split("PED-", 1)[1][:5]
        orders.append(
            SyntheticFact(
                "last_order", value, "account", episode, found, ("order",), typed(episode)
            )
        )
    merged = sorted(facts + orders, key=lambda fact: (fact.episode, fact.message))
    return tuple(merged)

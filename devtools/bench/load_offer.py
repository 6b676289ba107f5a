"""Offered load for ``relaydesk bench reply --model-latency``: customers sending signed WhatsApp
webhooks open loop, and the replies that reach the local Twilio API, matched to their messages.

Open loop: message ``i`` is due at ``start + i / rate``, whatever the gateway did with the
earlier ones, and its latencies count from that due time — a gateway that falls behind cannot
slow the senders down and hide its queue (no coordinated omission). The messages go round the
customers in turn, so one customer's messages are ``customers / rate`` seconds apart.

A reply is matched by recipient: the gateway sends it ``To`` the customer's number, one create
per reply (the texts stay far below Twilio's 1,600 characters, so none is split), and one
customer's turns are answered in the order their webhooks were acknowledged. So the k-th reply
to a number belongs to the k-th message of that number acknowledged with a 200.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

import httpx

from devtools.bench.reply_talk import ACCOUNT_SID, LINES
from devtools.local_twilio import LocalTwilio
from devtools.twilio_webhook import inbound_text, signed_form
from gateway.turns.answer.canned_texts import FALLBACK_MESSAGES

LEAD_S = 0.05  # between building the requests and the first due time
REQUEST_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 256


@dataclass(frozen=True, slots=True)
class Offered:
    """One message of the offered load: its sender, its due time and the webhook's answer
    (``status`` None: no answer at all), on `time.perf_counter`."""

    phone: str
    due: float
    answered: float
    status: int | None

    @property
    def acknowledged(self) -> bool:
        return self.status == 200


@dataclass(frozen=True, slots=True)
class Matched:
    """The messages' reply latencies (ms from the due time, sorted) and what was left over."""

    latencies_ms: tuple[float, ...]
    first_reply: float | None  # the earliest matched reply, on `time.perf_counter`
    last_reply: float | None  # the latest matched reply, on `time.perf_counter`
    fallbacks: int  # matched replies that were the model-failure message


class ReplyLog:
    """The local Twilio API the gateway sends its replies to; keeps each create's arrival time
    by recipient number, in arrival order."""

    def __init__(self) -> None:
        self._arrivals: dict[str, list[float]] = defaultdict(list)
        self._fallbacks: dict[str, set[int]] = defaultdict(set)
        self._changed = asyncio.Event()
        self._twilio = LocalTwilio(on_created=self._arrived)

    def serving(self) -> AbstractAsyncContextManager[str]:
        """Listen on a free loopback port; yields the API base URL."""
        return self._twilio.serving()

    def arrivals(self, phone: str) -> list[float]:
        return list(self._arrivals.get(phone, ()))

    def _arrived(self, at: float, form: Mapping[str, str]) -> None:
        phone = form.get("To", "").removeprefix("whatsapp:")
        if form.get("Body", "").strip() in FALLBACK_MESSAGES.values():  # in any language
            self._fallbacks[phone].add(len(self._arrivals[phone]))
        self._arrivals[phone].append(at)
        self._changed.set()

    def _answered(self, expected: Mapping[str, int]) -> int:
        return sum(min(len(self._arrivals.get(p, ())), n) for p, n in expected.items())

    async def wait_for(self, expected: Mapping[str, int], stall_s: float) -> int:
        """Until every number got ``expected[number]`` replies, or none came for ``stall_s``
        seconds; how many of the expected replies arrived."""
        total = sum(expected.values())
        while (answered := self._answered(expected)) < total:
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), stall_s)
            except TimeoutError:
                return answered
        return answered

    def match(self, offered: Sequence[Offered]) -> Matched:
        """Each acknowledged message's reply latency (see the module's docstring)."""
        by_phone: dict[str, list[Offered]] = defaultdict(list)
        for message in offered:
            if message.acknowledged:
                by_phone[message.phone].append(message)
        latencies: list[float] = []
        first: float | None = None
        last: float | None = None
        fallbacks = 0
        for phone, messages in by_phone.items():
            messages.sort(key=lambda m: m.answered)
            arrivals = self._arrivals.get(phone, [])
            for index, (message, arrived) in enumerate(zip(messages, arrivals, strict=False)):
                latencies.append((arrived - message.due) * 1000.0)
                first = arrived if first is None else min(first, arrived)
                last = arrived if last is None else max(last, arrived)
                fallbacks += index in self._fallbacks.get(phone, set())
        return Matched(tuple(sorted(latencies)), first, last, fallbacks)


@dataclass(frozen=True, slots=True)
class Load:
    """Where the load goes and how much: ``rate`` messages/s for ``seconds`` over ``phones``.
    ``run`` keeps this load's MessageSids apart from any other's."""

    url: str
    auth_token: str
    phones: tuple[str, ...]
    rate: float
    seconds: float
    run: str

    @property
    def messages(self) -> int:
        return max(1, round(self.rate * self.seconds))

    def expected(self, offered: Sequence[Offered]) -> dict[str, int]:
        """The replies due per number: one per acknowledged message."""
        counts: dict[str, int] = defaultdict(int)
        for message in offered:
            counts[message.phone] += message.acknowledged
        return dict(counts)


def webhook(load: Load, index: int, phone: str) -> tuple[dict[str, str], bytes]:
    """The signed webhook of message ``index``; its text starts with its reference."""
    rng = random.Random(f"relaydesk-bench-load:{index}")
    reference = f"{load.run}m{index}"
    line = rng.choice(LINES).format(n=rng.randint(10_000, 99_999))
    params = inbound_text(
        f"SM{reference}", phone, f"[{reference}] {line}", account=ACCOUNT_SID, profile_name="Bench"
    )
    return signed_form(load.url, params, load.auth_token)


async def offer(load: Load) -> list[Offered]:
    """Send the load open loop; every message's webhook answer, in due order."""
    # Signed before the clock starts, so that signing never delays a due message.
    requests = [
        (phone, *webhook(load, index, phone))
        for index in range(load.messages)
        for phone in (load.phones[index % len(load.phones)],)
    ]
    limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=64)
    async with httpx.AsyncClient(limits=limits, timeout=REQUEST_TIMEOUT_S) as client:
        start = time.perf_counter() + LEAD_S
        sends: list[asyncio.Task[Offered]] = []
        for index, (phone, headers, body) in enumerate(requests):
            due = start + index / load.rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            sends.append(asyncio.create_task(_send(client, load.url, phone, due, headers, body)))
        return list(await asyncio.gather(*sends))


async def _send(
    client: httpx.AsyncClient,
    url: str,
    phone: str,
    due: float,
    headers: dict[str, str],
    body: bytes,
) -> Offered:
    try:
        response = await client.post(url, content=body, headers=headers)
    except httpx.HTTPError:
        return Offered(phone, due, time.perf_counter(), None)
    return Offered(phone, due, time.perf_counter(), response.status_code)

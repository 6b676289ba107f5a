"""The chaos run's customers: signed Twilio WhatsApp webhooks, open loop, retried as Twilio
retries them.

Message ``i`` is due at ``start + i / rate`` whatever happened to the earlier ones (a gateway
that falls behind or goes down cannot slow the customers down), from customer ``i mod
customers``; its text starts with ``[<its MessageSid>]``, which the reply quotes
(`devtools.bench.chaos_replies`). A webhook answered with anything but 200 — or not answered:
refused, cut, or no answer within `REQUEST_TIMEOUT_S`, Twilio's own webhook timeout — is sent
again with the same MessageSid and body after a growing pause (`BACKOFF_S`), until a 200 or
until the run gives up on it (`finish`). Every attempt is kept (`Offered`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import aiohttp

from devtools.bench.chaos_records import Attempt, Offered
from devtools.bench.chaos_replies import tag
from devtools.bench.harness import TWILIO_TOKEN
from devtools.bench.reply_talk import ACCOUNT_SID, LINES
from devtools.twilio_webhook import inbound_text, signed_form

REQUEST_TIMEOUT_S = 15.0
# Pauses before the 2nd, 3rd, … attempt; the last one repeats.
BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
CONNECTIONS = 512


def customer_numbers(count: int) -> tuple[str, ...]:
    """``count`` distinct WhatsApp numbers (E.164)."""
    return tuple(f"+55319{index:08d}" for index in range(count))


@dataclass(slots=True)
class _Message:
    sid: str
    phone: str
    due: float
    text: str
    attempts: list[Attempt] = field(default_factory=list)


class ChaosLoad:
    """``rate`` messages/s from ``phones`` in turn to the WhatsApp webhook at ``url`` (the
    gateway's public URL plus the path, which the signature covers); ``run`` keeps this run's
    MessageSids apart."""

    def __init__(self, url: str, phones: Sequence[str], rate: float, run: str) -> None:
        if rate <= 0 or not phones:
            raise ValueError("the load needs a positive rate and at least one customer")
        self._url = url
        self._phones = tuple(phones)
        self._rate = rate
        self._run = run
        self._messages: list[_Message] = []
        self._sending: set[asyncio.Task[None]] = set()
        self._offering: asyncio.Task[None] | None = None
        self._http: aiohttp.ClientSession | None = None

    def start(self) -> None:
        """Begin offering (message 0 due now)."""
        self._http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=CONNECTIONS),
            timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
        )
        self._offering = asyncio.create_task(self._offer(time.perf_counter()))

    def stop_offering(self) -> None:
        """No new messages from now on; those sent keep being retried."""
        if self._offering is not None:
            self._offering.cancel()

    def unacknowledged(self) -> int:
        return sum(not any(a.ok for a in m.attempts) for m in self._messages)

    async def finish(self, deadline: float) -> None:
        """Wait until every message was acknowledged or ``deadline`` (`time.perf_counter`)
        passed, then give up on the rest and close the connections."""
        self.stop_offering()
        if self._offering is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._offering
        while self._sending and time.perf_counter() < deadline:
            await asyncio.sleep(0.2)
        for task in self._sending:
            task.cancel()
        await asyncio.gather(*self._sending, return_exceptions=True)
        if self._http is not None:
            await self._http.close()

    def offered(self) -> tuple[Offered, ...]:
        return tuple(Offered(m.sid, m.phone, m.due, tuple(m.attempts)) for m in self._messages)

    async def _offer(self, start: float) -> None:
        index = 0
        while True:
            due = start + index / self._rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            message = self._message(index, due)
            self._messages.append(message)
            task = asyncio.create_task(self._deliver(message))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)
            index += 1

    def _message(self, index: int, due: float) -> _Message:
        phone = self._phones[index % len(self._phones)]
        sid = f"SM{self._run}{index:08d}"
        line = LINES[index % len(LINES)].format(n=10_000 + index % 90_000)
        return _Message(sid, phone, due, f"{tag(sid)} {line}")

    async def _deliver(self, message: _Message) -> None:
        params = inbound_text(
            message.sid, message.phone, message.text, account=ACCOUNT_SID, profile_name="Chaos"
        )
        headers, body = signed_form(self._url, params, TWILIO_TOKEN)
        while True:
            attempt = await self._attempt(headers, body)
            message.attempts.append(attempt)
            if attempt.ok:
                return
            await asyncio.sleep(BACKOFF_S[min(len(message.attempts), len(BACKOFF_S)) - 1])

    async def _attempt(self, headers: dict[str, str], body: bytes) -> Attempt:
        assert self._http is not None
        started = time.perf_counter()
        status: int | None = None
        try:
            async with self._http.post(self._url, data=body, headers=headers) as response:
                await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError):
            pass
        return Attempt(started, time.perf_counter(), status)

"""Signed Twilio WhatsApp webhooks sent the way Twilio sends them, for the fault tests.

`signed_webhooks` builds distinct inbound messages (each its own MessageSid) signed for
`PUBLIC_URL`; `deliver` posts them with a few concurrent connections and records every attempt.
With `retry=True` it behaves like the provider: a webhook that did not get a 200 (an error
status, a refused or cut connection) is sent again after a short pause until it is
acknowledged; without it each webhook is tried once. The stored rows are then counted by
`devtools.bench.ingest.stored_counts`, the benchmark's own lost/duplicated check.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from devtools.twilio_webhook import WHATSAPP_PATH, inbound_text, signed_form

TOKEN = "twilio-auth-token-for-fault-tests"
PUBLIC_URL = "https://relay.example.org"
PATH = WHATSAPP_PATH
ACCOUNT = "AC" + "f" * 32


@dataclass(frozen=True, slots=True)
class Webhook:
    sid: str
    headers: dict[str, str]  # Content-Type and X-Twilio-Signature
    body: bytes


@dataclass(frozen=True, slots=True)
class Attempt:
    sid: str
    started: float  # time.monotonic()
    finished: float
    status: int | None  # None: no HTTP answer (refused, reset, timed out)
    error: str | None = None  # the JSON "error" code, or the transport error's type
    body: object = None  # the decoded JSON answer of a non-200, when it was JSON


@dataclass
class Delivery:
    """Every attempt so far and the acknowledged sids (a 200 was received)."""

    attempts: list[Attempt] = field(default_factory=list)
    acked: set[str] = field(default_factory=set)

    def statuses(self) -> dict[int | None, int]:
        counts: dict[int | None, int] = {}
        for attempt in self.attempts:
            counts[attempt.status] = counts.get(attempt.status, 0) + 1
        return counts


def signed_webhooks(
    run: str,
    count: int,
    senders: Sequence[str],
    *,
    token: str = TOKEN,
    public_url: str = PUBLIC_URL,
) -> list[Webhook]:
    """`count` inbound texts (sids `SM<run><i>`) from `senders` in turn, signed with `token`
    for `public_url`."""
    webhooks = []
    for i in range(count):
        sid = f"SM{run}{i:06d}"
        params = inbound_text(
            sid,
            senders[i % len(senders)],
            f"mensagem {i} do teste de falhas",
            account=ACCOUNT,
            profile_name="Falhas",
        )
        webhooks.append(Webhook(sid, *signed_form(public_url + PATH, params, token)))
    return webhooks


async def deliver(
    client: httpx.AsyncClient,
    base_url: str,
    webhooks: Sequence[Webhook],
    delivery: Delivery,
    *,
    concurrency: int = 8,
    retry: bool = True,
    retry_after_s: float = 0.05,
    deadline_s: float = 20.0,
) -> None:
    """Post `webhooks` to `base_url` (with retries when `retry`), recording into `delivery`.
    Raises TimeoutError when they are not all acknowledged within `deadline_s` (with retry)."""
    todo = deque(webhooks)
    deadline = time.monotonic() + deadline_s
    url = base_url.rstrip("/") + PATH

    async def one(webhook: Webhook) -> Attempt:
        started = time.monotonic()
        try:
            response = await client.post(url, content=webhook.body, headers=webhook.headers)
        except httpx.HTTPError as exc:
            return Attempt(webhook.sid, started, time.monotonic(), None, type(exc).__name__)
        finished = time.monotonic()
        if response.status_code == 200:
            return Attempt(webhook.sid, started, finished, 200)
        try:
            body = response.json()
        except ValueError:
            body = response.text
        code = body.get("error") if isinstance(body, dict) else None
        return Attempt(webhook.sid, started, finished, response.status_code, code, body)

    async def connection() -> None:
        while todo:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(todo)} webhooks not acknowledged in {deadline_s} s")
            webhook = todo.popleft()
            attempt = await one(webhook)
            delivery.attempts.append(attempt)
            if attempt.status == 200:
                delivery.acked.add(webhook.sid)
            elif retry:
                todo.append(webhook)
                await asyncio.sleep(retry_after_s)

    await asyncio.gather(*(connection() for _ in range(concurrency)))


async def pending_turns(database_url: str) -> int:
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            found = await connection.scalar(
                text("SELECT count(*) FROM turns WHERE status = 'pending'")
            )
            return int(found or 0)
    finally:
        await engine.dispose()

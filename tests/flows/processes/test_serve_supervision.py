"""`relaydesk serve --workers 2 --background 1` supervises its children: one killed with SIGKILL
is started again within 5 s, the others keep serving (the surviving gateway fails no webhook),
the restarts are counted by role in every gateway's `/metrics`, and only a signal to `serve`
stops them all — a child dying while they stop stays dead."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from devtools.bench.ingest import stored_counts
from tests.support.processes import alive, children_of
from tests.support.serve_workers import TOKEN, Served, instances_answering, serve_workers
from tests.support.webhook_load import Attempt, Delivery, deliver, signed_webhooks

# Serial: `relaydesk serve` with three children, one killed, and deadlines.
pytestmark = pytest.mark.serial

# The requirement: a killed child is back (answering, or for the background process working)
# within this long.
BACK_WITHIN_S = 5.0
SENDERS = tuple(f"+55219871000{i:02d}" for i in range(8))


async def _eventually(probe: Callable[[], bool], deadline_s: float, what: str) -> float:
    """Poll `probe` until it holds; the time (`time.monotonic`) it first did."""
    deadline = time.monotonic() + deadline_s
    while not probe():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)
    return time.monotonic()


async def _new_instance(port: int, known: set[str], deadline_s: float) -> float:
    """Ask /healthz over a new connection each time until a process not in `known` answers;
    the time it did."""
    deadline = time.monotonic() + deadline_s
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as http:
        while time.monotonic() < deadline:
            async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                body = await response.json()
                assert response.status == 200, body  # the survivor answers meanwhile
            if body["instance"] not in known:
                return time.monotonic()
            await asyncio.sleep(0.02)
    raise AssertionError(f"no new gateway instance answered within {deadline_s} s")


async def _restarts_scraped(root: str, scrapes: int = 10) -> list[dict[str, float]]:
    """`relaydesk_child_restarts_total` by role, from `scrapes` scrapes of `/metrics` over new
    connections (the kernel spreads them over the gateways)."""
    found = []
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as http:
        for _ in range(scrapes):
            async with http.get(root + "/metrics") as response:
                assert response.status == 200
                exposition = await response.text()
            counts = {
                sample.labels["role"]: sample.value
                for family in text_string_to_metric_families(exposition)
                if family.name == "relaydesk_child_restarts"
                for sample in family.samples
                if sample.name == "relaydesk_child_restarts_total"
            }
            found.append(counts)
    return found


@dataclass
class _Load:
    """Signed webhooks sent without pause until `stop`, in small batches, each retried (as
    Twilio does) until acknowledged; every attempt recorded."""

    served: Served
    http: httpx.AsyncClient
    delivery: Delivery
    stop: asyncio.Event

    async def run(self) -> None:
        run = uuid.uuid4().hex[:8]
        batch = 0
        while not self.stop.is_set():
            webhooks = signed_webhooks(
                f"{run}b{batch:05d}", 2, SENDERS, token=TOKEN, public_url=self.served.root
            )
            await deliver(self.http, self.served.root, webhooks, self.delivery, concurrency=2)
            batch += 1
            await asyncio.sleep(0.02)


def _failed(attempts: list[Attempt]) -> list[Attempt]:
    return [attempt for attempt in attempts if attempt.status != 200]


async def test_a_killed_gateway_is_replaced_while_the_other_fails_no_webhook(
    tmp_path: Path,
) -> None:
    async with serve_workers(tmp_path, workers=2, background=1) as served:
        before = await instances_answering(served.port, at_least=10, deadline_s=60)
        assert len(before) == 2, before
        children = served.children()
        assert (len(children.gateways), len(children.background)) == (2, 1), children
        victim, survivor = sorted(children.gateways)

        stop = asyncio.Event()
        fresh, kept = Delivery(), Delivery()
        # One sender opens a new connection per webhook, the other keeps its connections.
        async with (
            httpx.AsyncClient(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as new,
            httpx.AsyncClient(timeout=10) as keep_alive,
        ):
            loads = [
                asyncio.create_task(_Load(served, new, fresh, stop).run()),
                asyncio.create_task(_Load(served, keep_alive, kept, stop).run()),
            ]
            try:
                await _eventually(lambda: len(fresh.acked) + len(kept.acked) >= 40, 30, "load")
                killed_at = time.monotonic()
                os.kill(victim, signal.SIGKILL)
                gone_at = await _eventually(lambda: not alive(victim), 5, "the kill")
                back_at = await _new_instance(served.port, set(before), deadline_s=15)
                assert back_at - killed_at < BACK_WITHIN_S, back_at - killed_at
                # The load goes on a while over both gateways again.
                acked = len(fresh.acked) + len(kept.acked)
                await _eventually(
                    lambda: len(fresh.acked) + len(kept.acked) >= acked + 40, 30, "more load"
                )
            finally:
                stop.set()
                await asyncio.gather(*loads)
        attempts = fresh.attempts + kept.attempts
        # No HTTP error at any time: the surviving gateway answered every request it got.
        assert {attempt.status for attempt in attempts} <= {200, None}, fresh.statuses()
        # A request could fail only at the TCP level, on a connection of the killed process,
        # begun before it was gone; after that none did, on new or kept connections.
        assert [a for a in _failed(attempts) if a.started >= gone_at] == []
        # The survivor kept acknowledging while its sibling was down.
        assert any(gone_at <= a.started and a.finished <= back_at for a in attempts), attempts[-5:]

        after = served.children()
        assert survivor in after.gateways and victim not in after.gateways
        assert len(after.gateways) == 2 and after.background == children.background
        assert await _restarts_scraped(served.root) == [{"gateway": 1.0, "background": 0.0}] * 10
        assert "child process died" in served.output()

        # Only a signal to serve stops them; a child killed meanwhile is not started again.
        running = after.gateways | after.background
        served.process.send_signal(signal.SIGTERM)
        os.kill(min(after.background), signal.SIGKILL)
        seen: set[int] = set()
        deadline = time.monotonic() + 10
        while served.process.poll() is None:
            assert time.monotonic() < deadline, served.output()[-3000:]
            seen.update(children_of(served.process.pid))
            await asyncio.sleep(0.02)
        assert served.process.returncode == 0, served.output()[-3000:]
        assert seen <= running, (seen, running)
        assert not [pid for pid in running if alive(pid)]


async def test_a_killed_background_process_is_replaced_and_the_work_goes_on(
    tmp_path: Path,
) -> None:
    async with serve_workers(tmp_path, workers=2, background=1) as served:
        run = uuid.uuid4().hex[:8]
        twilio = served.twilio
        async with httpx.AsyncClient(timeout=10) as http:
            # The background process works: a first message is answered.
            first = signed_webhooks(f"{run}a", 1, SENDERS[:1], token=TOKEN, public_url=served.root)
            await deliver(http, served.root, first, Delivery())
            await _eventually(lambda: bool(twilio.created), 60, "the first reply")
            children = served.children()
            (victim,) = children.background

            killed_at = time.monotonic()
            os.kill(victim, signal.SIGKILL)
            # Acknowledged by the gateways whether a background process runs or not.
            later = signed_webhooks(f"{run}b", 6, SENDERS[1:7], token=TOKEN, public_url=served.root)
            acknowledged = Delivery()
            await deliver(http, served.root, later, acknowledged, retry=False)
            assert acknowledged.statuses() == {200: len(later)}

            replaced_at = await _eventually(
                lambda: len(served.children().background - {victim}) == 1, 15, "a replacement"
            )
            assert replaced_at - killed_at < BACK_WITHIN_S
            answered = {f"whatsapp:{sender}" for sender in SENDERS[1:7]}
            first_reply_at = await _eventually(
                lambda: any(reply["To"] in answered for reply in twilio.created),
                30,
                "a reply from the replacement",
            )
            assert first_reply_at - killed_at < BACK_WITHIN_S, first_reply_at - killed_at
            await _eventually(
                lambda: answered <= {reply["To"] for reply in twilio.created}, 30, "every reply"
            )
        counts = await stored_counts(served.database_url)
        assert {webhook.sid: counts.get(webhook.sid) for webhook in later} == dict.fromkeys(
            (webhook.sid for webhook in later), 1
        )
        assert await _restarts_scraped(served.root) == [{"gateway": 0.0, "background": 1.0}] * 10
        assert served.children().gateways == children.gateways  # untouched

"""``relaydesk bench ingest``: signed Twilio webhooks at rising rates against 2 gateway processes.

The command starts everything it needs and stops it at the end: a temporary PostgreSQL database
(created next to ``--postgres-url``, migrated, dropped), a fake Twilio Messages API on a
loopback port (so the replies are really sent, over HTTP, as in production), ``relaydesk serve
--workers 2`` on a free loopback port with the offline model and Redis, and, for the ceiling,
two bare aiohttp processes on another port whose only handler answers 200.

The load generator (an aiohttp client, HTTP/1.1 keep-alive, at most 64 connections) sends
pre-signed form bodies, each with its own MessageSid, open loop: request ``i`` is due at
``start + i / rate`` whatever happened to the earlier ones, and its latency is counted from that
due time, so a backlog shows up as latency instead of silently lowering the rate. A 200 means the
message is committed to the inbox; the background process stores and answers it afterwards. Each
rate is a burst on a settled system: after it the benchmark waits (bounded) until every message
of the burst is stored and answered, and reports how long that took — the pace of the work
behind the acknowledgements on this box. At the end the user messages are counted by
``provider_message_id``: an acknowledged sid without a row (message, or inbox row still waiting)
is lost, a sid with more than one message row is duplicated; the replies sent are counted too.

Everything runs on the same machine, load generator included, so the figures are those of the
whole box: the CPU the generator used per request is reported, and the bare handler's ceiling
shows how much of the box the generator and HTTP alone take.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import aiohttp
from aiohttp import web
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from tools.bench import harness, services
from tools.bench.harness import TWILIO_TOKEN, clean_env, free_port, percentile
from tools.local_twilio import LocalTwilio
from tools.twilio_webhook import WHATSAPP_PATH, inbound_text, signed_form

DEFAULT_RATES = (250, 1000, 1250, 2000)
DEFAULT_SECONDS = 5.0
WORKERS = 2
CONNECTIONS = 64
P99_TARGET_MS = 100.0
REQUEST_TIMEOUT_S = 30.0
SETTLE_TIMEOUT_S = 300.0
SENDERS = ("+5511990000001", "+5511990000002", "+5511990000003", "+5511990000004")
TWILIO_ACCOUNT = "AC" + "b" * 32

Progress = Callable[[str], None]


class IngestBenchError(RuntimeError):
    """A service the benchmark needs is unreachable, or the gateway did not start."""


@dataclass(frozen=True, slots=True)
class IngestOptions:
    rates: tuple[int, ...] = DEFAULT_RATES
    seconds: float = DEFAULT_SECONDS
    postgres_url: str = field(default_factory=services.postgres_url_from_env)
    redis_url: str = field(default_factory=services.redis_url_from_env)

    def __post_init__(self) -> None:
        if not self.rates or any(rate < 1 for rate in self.rates):
            raise ValueError("rates must be positive requests per second")
        if self.seconds <= 0:
            raise ValueError("seconds must be positive")


@dataclass(frozen=True, slots=True)
class RateResult:
    target: int
    sent: int
    acked: int
    errors: int
    elapsed_s: float
    p50_ms: float
    p99_ms: float
    generator_cpu_s: float = 0.0  # CPU the load generator itself used for this rate
    # After the burst, until every message of it was stored and answered (-1: not within the
    # bound); the background work's pace on this box.
    settle_s: float = 0.0

    @property
    def acked_per_s(self) -> float:
        return self.acked / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def generator_ms_per_request(self) -> float:
        return 1000.0 * self.generator_cpu_s / self.sent if self.sent else 0.0


@dataclass(frozen=True, slots=True)
class IngestResult:
    rates: tuple[RateResult, ...]
    bare: RateResult
    lost: int
    duplicated: int
    stored: int
    seconds: float
    replies_sent: int = 0
    turns_pending: int = 0
    inbox_left: int = 0  # acknowledged, durable, still waiting to be stored as messages

    @property
    def chosen(self) -> RateResult:
        """The highest rate that kept p99 under the target, else the highest rate."""
        within = [r for r in self.rates if r.errors == 0 and r.p99_ms < P99_TARGET_MS]
        return max(within, key=lambda r: r.target) if within else self.rates[-1]

    @property
    def chosen_within_target(self) -> bool:
        chosen = self.chosen
        return chosen.errors == 0 and chosen.p99_ms < P99_TARGET_MS

    def table(self) -> str:
        lines = [
            f"signed Twilio webhooks, {WORKERS} gateway processes + PostgreSQL + Redis, "
            f"offline model, {self.seconds:g} s per rate, {os.cpu_count()} CPUs",
            f"{'rate/s':>9} {'sent':>7} {'acked/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}"
            f" {'gen ms/req':>10} {'settled s':>9}",
        ]
        for r in (*self.rates, self.bare):
            label = f"{r.target}" if r is not self.bare else f"bare {r.target}"
            settled = "" if r is self.bare else f"{r.settle_s:.1f}" if r.settle_s >= 0 else "no"
            lines.append(
                f"{label:>9} {r.sent:>7} {r.acked_per_s:>9.1f} {r.p50_ms:>8.1f} "
                f"{r.p99_ms:>8.1f} {r.errors:>7} {r.generator_ms_per_request:>10.2f} {settled:>9}"
            )
        chosen = self.chosen
        why = (
            f"highest rate with p99 < {P99_TARGET_MS:g} ms and no errors"
            if self.chosen_within_target
            else f"no rate kept p99 < {P99_TARGET_MS:g} ms without errors: highest rate"
        )
        lines.append(f"figures at {chosen.target}/s ({why})")
        lines.append(
            f"database check: {self.stored} user messages kept, "
            f"{self.lost} lost, {self.duplicated} duplicated"
        )
        if self.inbox_left:
            lines.append(
                f"inbox: {self.inbox_left} acknowledged messages still waiting to be stored "
                "(durable, stored after a restart)"
            )
        lines.append(
            "settled s: after each burst, until all of its messages were stored and answered "
            "(the next rate starts on a settled system)"
        )
        lines.append(
            f"replies: {self.replies_sent} sent to the fake Twilio while the gateway ran, "
            f"{self.turns_pending} turns still pending when it stopped (answered after a restart)"
        )
        lines.append("gen ms/req: CPU of the load generator (same machine) per request")
        lines.append(
            f"bare aiohttp ceiling at {self.bare.target}/s: {self.bare.acked_per_s:.1f}/s, "
            f"ratio {self.ratio_to_bare:.3f}"
        )
        return "\n".join(lines)

    @property
    def ratio_to_bare(self) -> float:
        bare = self.bare.acked_per_s
        return self.chosen.acked_per_s / bare if bare > 0 else 0.0

    def json_line(self) -> str:
        chosen = self.chosen
        return json.dumps(
            {
                "acked_per_s": round(chosen.acked_per_s, 1),
                "p50_ms": round(chosen.p50_ms, 2),
                "p99_ms": round(chosen.p99_ms, 2),
                "lost": self.lost,
                "duplicated": self.duplicated,
                "bare_per_s": round(self.bare.acked_per_s, 1),
                "ratio_to_bare": round(self.ratio_to_bare, 3),
            }
        )


def signed_bodies(base_url: str, count: int, run: str) -> list[tuple[str, dict[str, str], bytes]]:
    """(MessageSid, headers, form body) for ``count`` distinct inbound messages."""
    url = f"{base_url}{WHATSAPP_PATH}"
    bodies = []
    for i in range(count):
        sid = f"SM{run}{i:010d}"
        params = inbound_text(
            sid,
            SENDERS[i % len(SENDERS)],
            f"bench message {i}",
            account="AC" + "0" * 32,
            profile_name="Bench",
        )
        bodies.append((sid, *signed_form(url, params, TWILIO_TOKEN)))
    return bodies


async def offer_load(
    client: aiohttp.ClientSession,
    url: str,
    bodies: Sequence[tuple[str, dict[str, str], bytes]],
    rate: int,
) -> tuple[RateResult, set[str]]:
    """Send ``bodies`` open loop at ``rate``/s; the result and the acknowledged sids."""
    latencies: list[float] = []
    acked: set[str] = set()
    errors = 0
    last_done = 0.0
    # At most CONNECTIONS requests inside the client at once: thousands of waiters in its pool
    # make the client itself the bottleneck. The rest wait here, and that wait still counts,
    # since latency runs from the due time.
    slots = asyncio.Semaphore(CONNECTIONS)

    async def one(due: float, sid: str, headers: dict[str, str], body: bytes) -> None:
        nonlocal errors, last_done
        try:
            async with slots:
                async with client.post(url, data=body, headers=headers) as response:
                    await response.read()
                    status = response.status
        except (aiohttp.ClientError, TimeoutError):
            errors += 1
            return
        finished = time.perf_counter()
        last_done = max(last_done, finished)
        if status == 200:
            latencies.append((finished - due) * 1000.0)
            acked.add(sid)
        else:
            errors += 1

    tasks: list[asyncio.Task[None]] = []
    cpu_before = _cpu_s()
    start = time.perf_counter()
    for i, (sid, headers, body) in enumerate(bodies):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(due, sid, headers, body)))
    await asyncio.gather(*tasks)
    generator_cpu = _cpu_s() - cpu_before
    # Acknowledged per second over the whole window: from the first due time to the last answer.
    elapsed = max(last_done - start, len(bodies) / rate)
    ordered = sorted(latencies)
    return (
        RateResult(
            target=rate,
            sent=len(bodies),
            acked=len(acked),
            errors=errors,
            elapsed_s=elapsed,
            p50_ms=percentile(ordered, 0.50),
            p99_ms=percentile(ordered, 0.99),
            generator_cpu_s=generator_cpu,
        ),
        acked,
    )


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system


async def _count(database_url: str, query: str) -> int:
    """One ``SELECT count(*) …`` on its own short-lived connection."""
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            return int(await connection.scalar(text(query)) or 0)
    finally:
        await engine.dispose()


async def _reply_counts(database_url: str) -> tuple[int, int]:
    """(replies the fake Twilio accepted, turns still pending)."""
    sent = await _count(database_url, "SELECT count(*) FROM turns WHERE delivery_status = 'sent'")
    pending = await _count(database_url, "SELECT count(*) FROM turns WHERE status = 'pending'")
    return sent, pending


async def stored_counts(database_url: str) -> dict[str, int]:
    """Kept inbound WhatsApp messages per provider message id: the stored message rows, or 1
    for a message acknowledged and still waiting in the inbox (durable, not yet stored)."""
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(
                text(
                    "SELECT provider_message_id, count(*) FROM messages "
                    "WHERE role = 'user' AND channel = 'whatsapp' "
                    "GROUP BY provider_message_id"
                )
            )
            counts = {str(sid): int(count) for sid, count in rows}
            waiting = await connection.scalars(
                text("SELECT provider_message_id FROM inbox_messages WHERE channel = 'whatsapp'")
            )
            for sid in waiting:
                counts.setdefault(str(sid), 1)
            return counts
    finally:
        await engine.dispose()


async def inbox_waiting(database_url: str) -> int:
    """Acknowledged messages not yet stored as messages."""
    return await _count(database_url, "SELECT count(*) FROM inbox_messages")


async def until_settled(database_url: str, deadline_s: float) -> float:
    """Wait (bounded) until nothing acknowledged waits to be stored, answered or sent; the
    seconds waited, or -1 when the bound ran out first."""
    return await _until_none(lambda: _unsettled(database_url), deadline_s)


async def until_inbox_empty(database_url: str, deadline_s: float) -> float:
    """Wait (bounded) until every acknowledged message is stored as a message; the seconds
    waited, or -1 when the bound ran out first."""
    return await _until_none(lambda: inbox_waiting(database_url), deadline_s)


async def _until_none(count: Callable[[], Awaitable[int]], deadline_s: float) -> float:
    started = time.monotonic()
    while await count():
        if time.monotonic() - started >= deadline_s:
            return -1.0
        await asyncio.sleep(0.5)
    return time.monotonic() - started


async def _unsettled(database_url: str) -> int:
    """Inbox rows not stored yet, turns not answered yet, replies still being (or waiting to
    be) sent — in one statement, so one snapshot: an inbox row is deleted only after its turn
    was created, and two separate counts could miss a message moving between them."""
    return await _count(
        database_url,
        "SELECT (SELECT count(*) FROM inbox_messages) + (SELECT count(*) FROM turns "
        "WHERE status = 'pending' OR delivery_status IN ('sending', 'retry'))",
    )


def _client() -> aiohttp.ClientSession:
    # aiohttp's client costs a third of httpx's CPU per request; on a box shared with the
    # servers that CPU is taken from them.
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=CONNECTIONS),
        timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
    )


async def _warm(client: aiohttp.ClientSession, url: str, run: str, base_url: str) -> set[str]:
    """A few requests so connections and caches exist before the first timed rate."""
    bodies = signed_bodies(base_url, CONNECTIONS, f"{run}w")
    _, acked = await offer_load(client, url, bodies, 500)
    return acked


async def run_ingest_bench(options: IngestOptions, progress: Progress) -> IngestResult:
    why = await services.services_unreachable(options.postgres_url, options.redis_url)
    if why is not None:
        raise IngestBenchError(why)
    try:
        return await _measure(options, progress)
    except harness.ServerNotReady as exc:
        raise IngestBenchError(str(exc)) from exc


async def _measure(options: IngestOptions, progress: Progress) -> IngestResult:
    command = harness.relaydesk_command()
    with tempfile.TemporaryDirectory(prefix="relaydesk-bench-ingest-") as tmp:
        workdir = Path(tmp)
        async with services.temporary_database(options.postgres_url) as database_url:
            port = free_port()
            base_url = f"http://127.0.0.1:{port}"
            twilio_port = free_port()
            env = harness.gateway_env(
                database_url=database_url,
                redis_url=options.redis_url,
                port=port,
                twilio_api=f"http://127.0.0.1:{twilio_port}",
                twilio_account=TWILIO_ACCOUNT,
            )
            progress("migrating the temporary database")
            migrated = await asyncio.to_thread(
                subprocess.run,
                [*command, "migrate"],
                env=env,
                cwd=workdir,
                capture_output=True,
                text=True,
                timeout=120,
            )
            if migrated.returncode != 0:
                raise IngestBenchError(f"relaydesk migrate failed:\n{migrated.stderr[-2000:]}")
            run = uuid.uuid4().hex[:8]
            url = f"{base_url}{WHATSAPP_PATH}"
            results: list[RateResult] = []
            acked_all: set[str] = set()
            sent_all: set[str] = set()
            progress(f"starting relaydesk serve --workers {WORKERS} on port {port}")
            serve = [*command, "serve", "--workers", str(WORKERS), "--port", str(port)]
            twilio = [sys.executable, "-m", "tools.bench.ingest", "--twilio", str(twilio_port)]
            async with (
                harness.serving([twilio], clean_env(), workdir, "twilio.log", twilio_port, "/"),
                harness.serving([serve], env, workdir, "serve.log", port, "/healthz"),
            ):
                async with _client() as client:
                    warm = await _warm(client, url, run, base_url)
                    acked_all |= warm
                    sent_all |= warm
                    await until_settled(database_url, SETTLE_TIMEOUT_S)
                    for rate in options.rates:
                        count = max(1, round(rate * options.seconds))
                        bodies = signed_bodies(base_url, count, f"{run}r{rate}x")
                        progress(f"{count} webhooks at {rate}/s")
                        result, acked = await offer_load(client, url, bodies, rate)
                        progress("waiting until every message of it is stored and answered")
                        settled = await until_settled(database_url, SETTLE_TIMEOUT_S)
                        result = replace(result, settle_s=settled)
                        results.append(result)
                        acked_all |= acked
                        sent_all |= {sid for sid, _, _ in bodies}
                        progress(
                            f"{rate}/s: {result.acked_per_s:.1f} acked/s, p50 "
                            f"{result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms, "
                            f"{result.errors} errors"
                        )
                inbox_left = await inbox_waiting(database_url)
                replies_sent, turns_pending = await _reply_counts(database_url)
            stored = await stored_counts(database_url)
            lost = len([sid for sid in acked_all if sid not in stored])
            duplicated = len([sid for sid, n in stored.items() if n > 1])
            unknown = len([sid for sid in stored if sid not in sent_all])
            if unknown:
                progress(f"{unknown} stored sids were never sent")

            bare_port = free_port()
            bare_base = f"http://127.0.0.1:{bare_port}"
            top = max(options.rates)
            bare_cmd = [sys.executable, "-m", "tools.bench.ingest", str(bare_port)]
            progress(f"bare aiohttp ceiling ({WORKERS} processes) at {top}/s")
            async with harness.serving(
                [bare_cmd] * WORKERS, clean_env(), workdir, "bare.log", bare_port, "/"
            ):
                async with _client() as client:
                    bare_url = f"{bare_base}{WHATSAPP_PATH}"
                    await _warm(client, bare_url, run, bare_base)
                    count = max(1, round(top * options.seconds))
                    bodies = signed_bodies(bare_base, count, f"{run}b")
                    bare, _ = await offer_load(client, bare_url, bodies, top)
    return IngestResult(
        rates=tuple(results),
        bare=bare,
        lost=lost,
        duplicated=duplicated,
        stored=sum(stored.values()),
        seconds=options.seconds,
        replies_sent=replies_sent,
        turns_pending=turns_pending,
        inbox_left=inbox_left,
    )


def _bare_server(port: int) -> None:
    """One bare aiohttp process: every request answers 200 (the port is shared)."""

    async def ok(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", ok)
    _run(app, port)


def _run(app: web.Application, port: int) -> None:
    # The same event loop as the gateway processes, so the ceiling compares like with like.
    from gateway.supervisor import new_event_loop

    web.run_app(
        app,
        host="127.0.0.1",
        port=port,
        reuse_port=True,
        access_log=None,
        print=None,
        handle_signals=True,
        loop=new_event_loop(),
    )


if __name__ == "__main__":
    if sys.argv[1] == "--twilio":
        # The local Twilio API the gateways send their replies to, in a process of its own.
        _run(LocalTwilio().app(), int(sys.argv[2]))
    else:
        _bare_server(int(sys.argv[1]))

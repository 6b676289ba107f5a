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

The settled pace (``settled_per_s``) is the work behind the acknowledgements as one figure: the
messages of the largest burst within the p99 target, divided by the time from that burst's first
due request until every one of its messages was stored and answered (burst plus settle).

The messages come from ``--senders`` customers, round robin (default `DEFAULT_SENDERS`): a burst
of a few thousand webhooks in a few seconds comes from many customers writing a few messages
each, not from a handful writing a thousand each; 500 gives each customer a short exchange (10
messages in a 5-second burst at 1,000/s, 2-3 at 250/s), so the pace counts first contacts
(a new customer and identity) and follow-up turns (a window with history) alike. Each sender's
turns are answered in order, one at a time, so very few senders measure a single conversation's
latency rather than the box's throughput.

Before and after in one run: ``--baseline DIR`` runs the same offered load (same rates, seconds
and senders) against the gateway of another source tree too — a checkout or a ``git worktree
add`` of an older commit, which must read the same ``RELAYDESK_*`` settings — each side on a
fresh database and its own compaction stream, and prints before | after | ratio. Each side's
``relaydesk migrate`` and ``relaydesk serve`` run as ``python -m gateway.cli`` with
``PYTHONPATH`` its tree (this module's tree for "after", ``DIR`` for "before"), and a side whose
``gateway`` would be imported from anywhere else (a removed tree, an installed package) stops
the run.
``--rounds N`` repeats both sides N times, alternating which goes first, and compares medians
(the box is shared and noisy); a rate is within the p99 target when its median p99 over the
rounds is, without errors, and the side-by-side table compares the burst of the highest rate
within target on both sides, so both columns are the same offered burst. The load generator,
the fake Twilio and the bare ceiling always run from this tree.

Everything runs on the same machine, load generator included, so the figures are those of the
whole box: the CPU the generator used per request is reported, and the bare handler's ceiling
shows how much of the box the generator and HTTP alone take.

What a message costs in CPU, per burst (``cpu_ms_per_message`` and the ``postgres_`` and
``redis_`` ones): the CPU seconds, read from ``/proc`` (`devtools.bench.process_cpu`), used from
the burst's first request until it settled, divided by its acknowledged messages — by the
``serve`` process tree (its gateway workers and background processes), and by every
``postgres`` and every ``redis-server`` process. Those servers are shared, so theirs is the
difference over the window and counts whatever else used them meanwhile (the benchmark's own
settle polls among it). The figures and their tables live in `devtools.bench.ingest_report`.
"""

from __future__ import annotations

import asyncio
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

from devtools.bench import harness, services
from devtools.bench.harness import TWILIO_TOKEN, clean_env, free_port, percentile
from devtools.bench.ingest_report import (
    AFTER,
    BEFORE,
    DEFAULT_SENDERS,
    WORKERS,
    IngestResult,
    RateResult,
    SideResult,
)
from devtools.bench.process_cpu import CpuSample, sample_cpu
from devtools.local_twilio import LocalTwilio
from devtools.twilio_webhook import WHATSAPP_PATH, inbound_text, signed_form

DEFAULT_RATES = (250, 1000, 1250, 2000)
DEFAULT_SECONDS = 5.0
CONNECTIONS = 64
REQUEST_TIMEOUT_S = 30.0
SETTLE_TIMEOUT_S = 300.0
SETTLE_POLL_S = 0.2
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
    senders: int = DEFAULT_SENDERS
    # The source tree of the "before" column (its gateway runs with PYTHONPATH=baseline).
    baseline: Path | None = None
    rounds: int = 1
    # Background processes beside the gateway processes (`serve --background`).
    background: int = 1

    def __post_init__(self) -> None:
        if not self.rates or any(rate < 1 for rate in self.rates):
            raise ValueError("rates must be positive requests per second")
        if self.seconds <= 0:
            raise ValueError("seconds must be positive")
        if self.senders < 1:
            raise ValueError("senders must be at least 1")
        if self.rounds < 1:
            raise ValueError("rounds must be at least 1")
        if self.background < 1:
            raise ValueError("background must be at least 1")
        if self.baseline is not None and not (self.baseline / "gateway" / "cli.py").is_file():
            raise ValueError(f"{self.baseline} is not a source tree (no gateway/cli.py)")


def sender_numbers(count: int) -> tuple[str, ...]:
    """``count`` distinct WhatsApp numbers (E.164), the customers the burst comes from."""
    return tuple(f"+55119{index:08d}" for index in range(count))


def signed_bodies(
    base_url: str, count: int, run: str, senders: Sequence[str]
) -> list[tuple[str, dict[str, str], bytes]]:
    """(MessageSid, headers, form body) for ``count`` distinct inbound messages, from
    ``senders`` in turn."""
    url = f"{base_url}{WHATSAPP_PATH}"
    bodies = []
    for i in range(count):
        sid = f"SM{run}{i:010d}"
        params = inbound_text(
            sid,
            senders[i % len(senders)],
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
    return await _until_none(lambda: unsettled(database_url), deadline_s)


async def until_inbox_empty(database_url: str, deadline_s: float) -> float:
    """Wait (bounded) until every acknowledged message is stored as a message; the seconds
    waited, or -1 when the bound ran out first."""
    return await _until_none(lambda: inbox_waiting(database_url), deadline_s)


async def _until_none(count: Callable[[], Awaitable[int]], deadline_s: float) -> float:
    started = time.monotonic()
    while await count():
        if time.monotonic() - started >= deadline_s:
            return -1.0
        await asyncio.sleep(SETTLE_POLL_S)
    return time.monotonic() - started


async def unsettled(database_url: str) -> int:
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


async def _warm(
    client: aiohttp.ClientSession, url: str, run: str, base_url: str, senders: Sequence[str]
) -> set[str]:
    """A few requests so connections and caches exist before the first timed rate."""
    bodies = signed_bodies(base_url, CONNECTIONS, f"{run}w", senders)
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


# The source tree this module belongs to: the "after" side's gateway.
THIS_TREE = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class _Gateway:
    """One side's ``relaydesk``: ``python -m gateway.cli`` with ``PYTHONPATH`` the side's source
    tree, so its own gateway package is the one imported, whatever this environment has
    installed (checked before it starts: `verify_source`)."""

    source: Path

    @property
    def command(self) -> list[str]:
        return [sys.executable, "-m", "gateway.cli"]

    @property
    def env(self) -> dict[str, str]:
        return {"PYTHONPATH": str(self.source)}

    def serve(self, port: int, background: int) -> list[str]:
        """``relaydesk serve`` with the side's workers; ``--background`` only where asked for
        more than one and the tree has the option (one from before it runs its one background
        process, and the table says so)."""
        command = [*self.command, "serve", "--workers", str(WORKERS), "--port", str(port)]
        if background > 1 and self.background_option:
            command += ["--background", str(background)]
        return command

    @property
    def background_option(self) -> bool:
        cli = self.source / "gateway" / "cli.py"
        return cli.is_file() and '"--background"' in cli.read_text(encoding="utf-8")


def _gateways(options: IngestOptions) -> dict[str, _Gateway]:
    sides = {AFTER: _Gateway(THIS_TREE)}
    if options.baseline is not None:
        sides[BEFORE] = _Gateway(options.baseline.resolve())
    return sides


def _helper_env() -> dict[str, str]:
    """The fake Twilio's and the bare servers' environment: this tree's code."""
    return clean_env(PYTHONPATH=str(THIS_TREE))


async def verify_source(gateway: _Gateway, env: dict[str, str], workdir: Path) -> None:
    """Raise `IngestBenchError` unless `gateway.cli` imports from the side's tree (a removed or
    moved tree would silently run whatever gateway is installed)."""
    probe = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", "import gateway.cli; print(gateway.cli.__file__)"],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = Path(probe.stdout.strip() or ".").resolve()
    if probe.returncode != 0 or not found.is_relative_to(gateway.source):
        raise IngestBenchError(
            f"the gateway to run from {gateway.source} imports from {found} instead"
            f"{': ' + probe.stderr[-500:] if probe.returncode else ''}"
        )


def _order(sides: Sequence[str], round_index: int) -> list[str]:
    """Before first in even rounds, after first in odd ones: neither side always gets the box
    as it was at the start."""
    ordered = sorted(sides, key=lambda side: side != BEFORE)
    return ordered if round_index % 2 == 0 else ordered[::-1]


async def _measure(options: IngestOptions, progress: Progress) -> IngestResult:
    senders = sender_numbers(options.senders)
    gateways = _gateways(options)
    runs: dict[str, list[SideResult]] = {side: [] for side in gateways}
    with tempfile.TemporaryDirectory(prefix="relaydesk-bench-ingest-") as tmp:
        workdir = Path(tmp)
        for round_index in range(options.rounds):
            for side in _order(list(gateways), round_index):
                if len(gateways) > 1 or options.rounds > 1:
                    progress(f"round {round_index + 1}/{options.rounds}: {side}")
                runs[side].append(
                    await _measure_side(
                        options, gateways[side], senders, workdir / f"{side}{round_index}", progress
                    )
                )
        bare = await _bare_ceiling(options, senders, workdir, progress)
    return IngestResult(
        runs={side: tuple(runs[side]) for side in (BEFORE, AFTER) if side in runs},
        bare=bare,
        seconds=options.seconds,
        senders=options.senders,
        background=options.background,
        background_before=(
            options.background if BEFORE in gateways and gateways[BEFORE].background_option else 1
        ),
    )


async def _measure_side(
    options: IngestOptions,
    gateway: _Gateway,
    senders: Sequence[str],
    workdir: Path,
    progress: Progress,
) -> SideResult:
    """The rates against one gateway on a fresh database: its rows and its database check."""
    workdir.mkdir()
    run = uuid.uuid4().hex[:8]
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
            # Its own stream: jobs a previous run left would name customers of another database.
            RELAYDESK_COMPACTION_STREAM=f"relaydesk:bench:{run}:compaction",
            **gateway.env,
        )
        await verify_source(gateway, env, workdir)
        progress("migrating the temporary database")
        migrated = await asyncio.to_thread(
            subprocess.run,
            [*gateway.command, "migrate"],
            env=env,
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if migrated.returncode != 0:
            raise IngestBenchError(f"relaydesk migrate failed:\n{migrated.stderr[-2000:]}")
        url = f"{base_url}{WHATSAPP_PATH}"
        results: list[RateResult] = []
        acked_all: set[str] = set()
        sent_all: set[str] = set()
        serve = gateway.serve(port, options.background)
        progress(f"starting relaydesk {' '.join(serve[3:])}")
        twilio = [sys.executable, "-m", "devtools.bench.ingest", "--twilio", str(twilio_port)]
        try:
            async with (
                harness.serving([twilio], _helper_env(), workdir, "twilio.log", twilio_port, "/"),
                harness.serving([serve], env, workdir, "serve.log", port, "/healthz") as served,
            ):
                gateway_pids = [process.pid for process in served]
                async with _client() as client:
                    warm = await _warm(client, url, run, base_url, senders)
                    acked_all |= warm
                    sent_all |= warm
                    await until_settled(database_url, SETTLE_TIMEOUT_S)
                    for rate in options.rates:
                        count = max(1, round(rate * options.seconds))
                        bodies = signed_bodies(base_url, count, f"{run}r{rate}x", senders)
                        progress(f"{count} webhooks at {rate}/s")
                        cpu_before = sample_cpu(gateway_pids)
                        result, acked = await offer_load(client, url, bodies, rate)
                        progress("waiting until every message of it is stored and answered")
                        settled = await until_settled(database_url, SETTLE_TIMEOUT_S)
                        result = _with_cpu(
                            replace(result, settle_s=settled), cpu_before, sample_cpu(gateway_pids)
                        )
                        results.append(result)
                        acked_all |= acked
                        sent_all |= {sid for sid, _, _ in bodies}
                        progress(
                            f"{rate}/s: {result.acked_per_s:.1f} acked/s, p50 "
                            f"{result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms, "
                            f"{result.errors} errors, settled in {settled:.1f} s, "
                            f"{result.settled_per_s:.1f}/s, CPU per message: gateway "
                            f"{result.cpu_ms_per_message:.2f} ms, PostgreSQL "
                            f"{result.postgres_cpu_ms_per_message:.2f} ms, Redis "
                            f"{result.redis_cpu_ms_per_message:.2f} ms"
                        )
                inbox_left = await inbox_waiting(database_url)
                replies_sent, turns_pending = await _reply_counts(database_url)
        finally:
            await _drop_stream(options.redis_url, f"relaydesk:bench:{run}:compaction")
        stored = await stored_counts(database_url)
    lost = len([sid for sid in acked_all if sid not in stored])
    duplicated = len([sid for sid, n in stored.items() if n > 1])
    unknown = len([sid for sid in stored if sid not in sent_all])
    if unknown:
        progress(f"{unknown} stored sids were never sent")
    return SideResult(
        rates=tuple(results),
        lost=lost,
        duplicated=duplicated,
        stored=sum(stored.values()),
        replies_sent=replies_sent,
        turns_pending=turns_pending,
        inbox_left=inbox_left,
    )


def _with_cpu(result: RateResult, before: CpuSample | None, after: CpuSample | None) -> RateResult:
    """``result`` with the CPU used between the two samples (unchanged without ``/proc``)."""
    if before is None or after is None:
        return result
    used = after.since(before)
    return replace(
        result,
        gateway_cpu_s=used.gateway_s,
        postgres_cpu_s=used.postgres_s,
        redis_cpu_s=used.redis_s,
    )


async def _drop_stream(redis_url: str, stream: str) -> None:
    from redis.asyncio import Redis

    client = Redis.from_url(redis_url)
    try:
        await client.delete(stream)
    finally:
        await client.aclose()


async def _bare_ceiling(
    options: IngestOptions, senders: Sequence[str], workdir: Path, progress: Progress
) -> RateResult:
    bare_port = free_port()
    bare_base = f"http://127.0.0.1:{bare_port}"
    top = max(options.rates)
    run = uuid.uuid4().hex[:8]
    bare_cmd = [sys.executable, "-m", "devtools.bench.ingest", str(bare_port)]
    progress(f"bare aiohttp ceiling ({WORKERS} processes) at {top}/s")
    async with harness.serving(
        [bare_cmd] * WORKERS, _helper_env(), workdir, "bare.log", bare_port, "/"
    ):
        async with _client() as client:
            bare_url = f"{bare_base}{WHATSAPP_PATH}"
            await _warm(client, bare_url, run, bare_base, senders)
            count = max(1, round(top * options.seconds))
            bodies = signed_bodies(bare_base, count, f"{run}b", senders)
            bare, _ = await offer_load(client, bare_url, bodies, top)
    return bare


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

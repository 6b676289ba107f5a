"""``relaydesk bench reply --model-latency S``: how many replies per second the gateway sustains
when the model takes as long as a real one, beside the instant offline model.

``customers`` WhatsApp numbers send signed webhooks open loop at ``rate`` messages/s for
``seconds`` (`devtools.bench.load_offer`). The same load runs twice on one temporary PostgreSQL
database and Redis: first against ``relaydesk serve --workers 2 --background M`` with the
offline model, then against a second such stack started in its place whose model is a local
OpenAI-compatible server that answers after ``S`` seconds (`devtools.bench.model_server`), each
side with numbers of its own. A gateway's model is a process setting, hence the restart.

Per side: reply latency p50/p99 (from each message's due time to its reply reaching the local
Twilio API), sustained replies/s (replies over the span from the first due time to the last
reply), acknowledgement p99, replies missing and the peak of model requests in flight — what
bounds a slow model's throughput is how many calls the gateway keeps open at once. Each side
first answers one warm-up message from a number of its own (connections, caches), left out.

With ``webchat`` visitors, after the slow side's load is answered, that many new web chat
visitors send one message each on the same stack, then as many others again
(`devtools.bench.load_webchat`): the first round is the first web chat the gateway processes ever
accept (the load came by WhatsApp), so both are reported, the second as the figure.

Compaction is off in the gateways (``RELAYDESK_RUN_COMPACTION=false``), as in production where
``relaydesk worker`` does it; the run's Redis keys and compaction jobs are deleted at the end.
"""

from __future__ import annotations

import contextlib
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from devtools.bench import services
from devtools.bench.harness import TWILIO_TOKEN
from devtools.bench.load_offer import Load, Offered, ReplyLog, offer
from devtools.bench.load_report import LoadResult, SideResult
from devtools.bench.load_webchat import WebchatRounds, forget_visitors, visit_twice
from devtools.bench.model_server import REPLY_TOKENS, SlowModel
from devtools.bench.reply_jobs import forget_keys, stream_position, take_jobs
from devtools.bench.reply_stack import GATEWAY_PROCESSES, answering_gateway, gateways
from devtools.bench.reply_talk import ReplyBenchError
from devtools.twilio_webhook import WHATSAPP_PATH
from gateway.storage.engine import make_sessionmaker

__all__ = ["LoadOptions", "LoadResult", "ReplyBenchError", "run_load_bench"]

DEFAULT_CUSTOMERS = 40
DEFAULT_RATE = 20.0
DEFAULT_SECONDS = 5.0
DEFAULT_BACKGROUND = 2
# The gateway gives one model call 60 s; the latency and the stream must fit in it.
MAX_MODEL_LATENCY_S = 30.0
MAX_MESSAGES = 20_000
STALL_S = 20.0  # a side gives up on its missing replies after this long without any reply
WARMUP_TIMEOUT_S = 60.0
WEBCHAT_TIMEOUT_S = 120.0
SLOW_MODEL = "openai:bench-slow"

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class LoadOptions:
    model_latency_s: float
    stream_rate: float | None = None  # tokens/s after the first token; None: all at once
    customers: int = DEFAULT_CUSTOMERS
    rate: float = DEFAULT_RATE  # messages/s offered, all customers together
    seconds: float = DEFAULT_SECONDS
    background: int = DEFAULT_BACKGROUND  # `serve --background M`
    webchat: int = 0  # web chat visitors for the first-token figure
    postgres_url: str = field(default_factory=services.postgres_url_from_env)
    redis_url: str = field(default_factory=services.redis_url_from_env)

    def __post_init__(self) -> None:
        if not 0 < self.model_latency_s <= MAX_MODEL_LATENCY_S:
            raise ValueError(
                f"the model latency must be above 0 and at most {MAX_MODEL_LATENCY_S:g} s"
            )
        if self.stream_rate is not None and self.stream_rate <= 0:
            raise ValueError("the stream rate must be positive tokens per second")
        if self.customers < 1:
            raise ValueError("customers must be at least 1")
        if self.rate <= 0 or self.seconds <= 0:
            raise ValueError("the rate and the seconds must be positive")
        if self.rate * self.seconds > MAX_MESSAGES:
            raise ValueError(f"at most {MAX_MESSAGES} messages per side (rate x seconds)")
        if self.background < 1:
            raise ValueError("the background processes must be at least 1")
        if self.webchat < 0:
            raise ValueError("web chat visitors must not be negative")

    @property
    def serve_args(self) -> tuple[str, ...]:
        # `serve --background` is new; one background process is what a serve without it runs.
        return () if self.background == 1 else ("--background", str(self.background))

    @property
    def stall_s(self) -> float:
        streaming = REPLY_TOKENS / self.stream_rate if self.stream_rate else 0.0
        return STALL_S + self.model_latency_s + streaming

    def slow_model_name(self) -> str:
        stream = f", {self.stream_rate:g} tok/s" if self.stream_rate else ""
        return f"slow ({self.model_latency_s:g} s{stream})"


@dataclass(frozen=True, slots=True)
class _Side:
    name: str
    model: str  # its row's label
    model_env: dict[str, str]
    phones: tuple[str, ...]
    warmup_phone: str
    run: str = field(default_factory=lambda: "l" + uuid.uuid4().hex[:8])


def _phones(area: int, count: int) -> tuple[str, ...]:
    """``count`` distinct Brazilian mobile numbers in area ``area``."""
    return tuple(f"+55{area}98{index:07d}" for index in range(count))


def _sides(options: LoadOptions, model_url: str) -> tuple[_Side, _Side]:
    offline_phones = _phones(11, options.customers + 1)
    slow_phones = _phones(21, options.customers + 1)
    return (
        _Side(
            "offline",
            "offline (instant)",
            {"RELAYDESK_MODEL": "offline"},
            offline_phones[:-1],
            offline_phones[-1],
        ),
        _Side(
            "slow",
            options.slow_model_name(),
            {"RELAYDESK_MODEL": SLOW_MODEL, "RELAYDESK_MODEL_BASE_URL": model_url},
            slow_phones[:-1],
            slow_phones[-1],
        ),
    )


@dataclass(frozen=True, slots=True)
class _Stack:
    """What both sides share: the options, the database, the Twilio API, the model."""

    options: LoadOptions
    database_url: str
    twilio_api: str
    replies: ReplyLog
    model: SlowModel
    workdir: Path
    progress: Progress


async def _warm_up(stack: _Stack, side: _Side, url: str) -> None:
    warmup = Load(url, TWILIO_TOKEN, (side.warmup_phone,), 1.0, 1.0, f"{side.run}w")
    offered = await offer(warmup)
    if await stack.replies.wait_for(warmup.expected(offered), WARMUP_TIMEOUT_S) < 1:
        raise ReplyBenchError(
            f"{side.name}: no reply to the warm-up message within {WARMUP_TIMEOUT_S:g} s "
            f"(webhook answered {offered[0].status})"
        )


def _result(side: _Side, offered: list[Offered], stack: _Stack) -> SideResult:
    matched = stack.replies.match(offered)
    first_due = min(message.due for message in offered)
    return SideResult(
        model=side.model,
        offered=len(offered),
        refused=sum(not message.acknowledged for message in offered),
        latencies_ms=matched.latencies_ms,
        ack_ms=tuple(sorted((m.answered - m.due) * 1000.0 for m in offered if m.acknowledged)),
        fallbacks=matched.fallbacks,
        span_s=0.0 if matched.last_reply is None else matched.last_reply - first_due,
        reply_span_s=(
            0.0
            if matched.first_reply is None or matched.last_reply is None
            else matched.last_reply - matched.first_reply
        ),
        peak_in_flight=stack.model.peak_in_flight,
        model_requests=len(stack.model.requests),
    )


async def _run_side(
    stack: _Stack, side: _Side, with_webchat: bool
) -> tuple[SideResult, WebchatRounds | None]:
    options, progress = stack.options, stack.progress
    gateway = answering_gateway(
        f"load-{side.name}",
        database_url=stack.database_url,
        redis_url=options.redis_url,
        twilio_api=stack.twilio_api,
        serve_args=options.serve_args,
        **side.model_env,  # the offline model unless the side names another
    )
    progress(
        f"{side.name}: starting relaydesk serve --workers {GATEWAY_PROCESSES} "
        f"{' '.join(options.serve_args)}".rstrip()
    )
    try:
        async with gateways([gateway], stack.workdir):
            gateway_url = f"http://127.0.0.1:{gateway.port}"
            await _warm_up(stack, side, gateway_url + WHATSAPP_PATH)
            stack.model.reset()
            load = Load(
                gateway_url + WHATSAPP_PATH,
                TWILIO_TOKEN,
                side.phones,
                options.rate,
                options.seconds,
                side.run,
            )
            progress(
                f"{side.name}: {load.messages} messages at {options.rate:g}/s from "
                f"{len(side.phones)} customers"
            )
            offered = await offer(load)
            answered = await stack.replies.wait_for(load.expected(offered), options.stall_s)
            result = _result(side, offered, stack)
            progress(
                f"{side.name}: {answered} of {len(offered)} replies, p99 {result.p99_ms:.0f} ms, "
                f"{result.replies_per_s:.2f} replies/s, peak {result.peak_in_flight} in flight"
            )
            webchat = None
            if with_webchat:
                progress(f"{side.name}: {options.webchat} web chat visitors, twice")
                webchat = await visit_twice(
                    gateway_url, options.webchat, side.run, stack.model, WEBCHAT_TIMEOUT_S
                )
            return result, webchat
    except ReplyBenchError as exc:
        if "unrecognized arguments: --background" in str(exc):
            raise ReplyBenchError(
                "this relaydesk serve has no --background option yet: run with --background 1"
            ) from exc
        raise


async def _forget(
    redis: Redis, sessions: async_sessionmaker[AsyncSession], sides: tuple[_Side, _Side], since: str
) -> None:
    """Delete the run's jobs and keys from Redis (the database goes with the run)."""
    async with sessions() as session:
        customers = list((await session.scalars(text("SELECT id FROM customers"))).all())
    await take_jobs(redis, customers, since)
    await forget_keys(redis, customers, [side.run for side in sides])
    for side in sides:
        await forget_visitors(redis, side.run)


async def run_load_bench(options: LoadOptions, progress: Progress) -> LoadResult:
    why = await services.services_unreachable(options.postgres_url, options.redis_url)
    if why is not None:
        raise ReplyBenchError(why)
    model = SlowModel(options.model_latency_s, options.stream_rate)
    replies = ReplyLog()
    with tempfile.TemporaryDirectory(prefix="relaydesk-bench-load-") as tmp:
        async with contextlib.AsyncExitStack() as stack:
            redis = Redis.from_url(options.redis_url)
            stack.push_async_callback(redis.aclose)
            twilio_api = await stack.enter_async_context(replies.serving())
            model_url = await stack.enter_async_context(model.serving())
            database_url, engine = await stack.enter_async_context(
                services.migrated_database(options.postgres_url)
            )
            sides = _sides(options, model_url)
            # Before the database is dropped: it names the customers whose keys to delete.
            stack.push_async_callback(
                _forget, redis, make_sessionmaker(engine), sides, await stream_position(redis)
            )
            shared = _Stack(options, database_url, twilio_api, replies, model, Path(tmp), progress)
            offline, _ = await _run_side(shared, sides[0], with_webchat=False)
            slow, webchat = await _run_side(shared, sides[1], with_webchat=options.webchat > 0)
    return LoadResult(
        offline=offline,
        slow=slow,
        webchat=webchat,
        customers=options.customers,
        rate=options.rate,
        seconds=options.seconds,
        background=options.background,
        model_latency_s=options.model_latency_s,
        stream_rate=options.stream_rate,
    )

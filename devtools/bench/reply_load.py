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
bounds a slow model's throughput is how many calls the gateway keeps open at once — and the CPU
the gateway's processes used per reply (`devtools.bench.process_cpu`): on a small machine a side
needing more of it than there is falls behind whatever its model does. Each side first answers
one warm-up message from a number of its own (connections, caches), left out.

A conversation's turns are answered one at a time, so a customer whose messages come closer
together than a turn takes (``customers / rate`` seconds apart) queues behind itself, whatever
the gateway's capacity; the table says so when the load is shaped that way.

With ``tool_latency`` a third side follows on a third such stack: the same slow model, the same
rate and load, but the tenant offers a read action (`devtools.bench.business_api`: a local API
that answers after ``tool_latency`` seconds) and the model calls it once per turn before it
answers (`devtools.bench.model_tool_calls`), so a turn is two model calls and one action call.
It is reported beside the slow side without the action: their replies/s ratio and the p99
against two model latencies, the action's and a second (`devtools.bench.load_tool_report`),
and the calls the API answered; a run whose action was never called fails. The offline side
runs as without it, as the first.

With ``webchat`` visitors, after the slow side's load is answered, that many new web chat
visitors send one message each on the same stack, then as many others again
(`devtools.bench.load_webchat`): the first round is the first web chat the gateway processes ever
accept (the load came by WhatsApp), so both are reported, the second as the figure.

With ``embedded_history`` every side's customers first get a short stored history whose
vectors are computed before any gateway starts (`devtools.bench.embedded_history`), so each
measured reply embeds its own message for hybrid recall; the gateways keep the embeddings of
their settings' default (the offline model).

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

from context import TiktokenCounter, load_encoding
from devtools.bench import services
from devtools.bench.business_api import ORDER_STATUS, OrdersApi
from devtools.bench.embedded_history import EmbeddedHistory, seed_embedded_history
from devtools.bench.harness import TWILIO_TOKEN
from devtools.bench.load_offer import Load, Offered, ReplyLog, offer
from devtools.bench.load_options import LoadOptions
from devtools.bench.load_report import LoadResult, SideResult
from devtools.bench.load_tool_report import ToolRun
from devtools.bench.load_webchat import WebchatRounds, forget_visitors, visit_twice
from devtools.bench.model_server import SlowModel
from devtools.bench.process_cpu import tree_cpu_s
from devtools.bench.reply_jobs import forget_keys, stream_position, take_jobs
from devtools.bench.reply_load_tools import acting_env, check_called, offer_action, tool_run
from devtools.bench.reply_stack import GATEWAY_PROCESSES, answering_gateway, gateways
from devtools.bench.reply_talk import ReplyBenchError
from devtools.twilio_webhook import WHATSAPP_PATH
from gateway.storage.engine import make_sessionmaker

__all__ = ["LoadOptions", "LoadResult", "ReplyBenchError", "run_load_bench"]

WARMUP_TIMEOUT_S = 60.0
WEBCHAT_TIMEOUT_S = 120.0
SLOW_MODEL = "openai:bench-slow"

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class _Side:
    name: str
    model: str  # its row's label
    model_env: dict[str, str]
    phones: tuple[str, ...]
    warmup_phone: str
    acting: bool = False  # its tenant offers the read action
    run: str = field(default_factory=lambda: "l" + uuid.uuid4().hex[:8])


def _phones(area: int, count: int) -> tuple[str, ...]:
    """``count`` distinct Brazilian mobile numbers in area ``area``."""
    return tuple(f"+55{area}98{index:07d}" for index in range(count))


def _sides(options: LoadOptions, model_url: str) -> tuple[_Side, ...]:
    offline_phones = _phones(11, options.customers + 1)
    slow_phones = _phones(21, options.customers + 1)
    slow_env = {"RELAYDESK_MODEL": SLOW_MODEL, "RELAYDESK_MODEL_BASE_URL": model_url}
    if options.tool_latency_s is not None:
        slow_env.update(acting_env())
    sides = (
        _Side(
            "offline",
            "offline (instant)",
            {"RELAYDESK_MODEL": "offline"},
            offline_phones[:-1],
            offline_phones[-1],
        ),
        _Side("slow", options.slow_model_name(), slow_env, slow_phones[:-1], slow_phones[-1]),
    )
    if options.tool_latency_s is None:
        return sides
    tool_phones = _phones(31, options.customers + 1)
    return (
        *sides,
        _Side(
            "tools",
            options.tool_model_name(),
            slow_env,
            tool_phones[:-1],
            tool_phones[-1],
            acting=True,
        ),
    )


@dataclass(frozen=True, slots=True)
class _Stack:
    """What the sides share: the options, the database, the Twilio API, the model and the
    business API (with ``tool_latency``)."""

    options: LoadOptions
    database_url: str
    sessions: async_sessionmaker[AsyncSession]
    twilio_api: str
    replies: ReplyLog
    model: SlowModel
    workdir: Path
    progress: Progress
    api: OrdersApi | None = None
    api_url: str = ""


@dataclass(frozen=True, slots=True)
class _SideRun:
    result: SideResult
    webchat: WebchatRounds | None = None
    tool_run: ToolRun | None = None


async def _warm_up(stack: _Stack, side: _Side, url: str) -> None:
    warmup = Load(url, TWILIO_TOKEN, (side.warmup_phone,), 1.0, 1.0, f"{side.run}w")
    offered = await offer(warmup)
    if await stack.replies.wait_for(warmup.expected(offered), WARMUP_TIMEOUT_S) < 1:
        raise ReplyBenchError(
            f"{side.name}: no reply to the warm-up message within {WARMUP_TIMEOUT_S:g} s "
            f"(webhook answered {offered[0].status})"
        )


def _result(side: _Side, offered: list[Offered], stack: _Stack, cpu_s: float | None) -> SideResult:
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
        gateway_cpu_s=cpu_s,
    )


async def _run_side(stack: _Stack, side: _Side, with_webchat: bool) -> _SideRun:
    options, progress = stack.options, stack.progress
    gateway = answering_gateway(
        f"load-{side.name}",
        database_url=stack.database_url,
        redis_url=options.redis_url,
        twilio_api=stack.twilio_api,
        serve_args=options.serve_args,
        **side.model_env,  # the offline model unless the side names another
    )
    api = stack.api if side.acting else None
    if api is not None:
        await offer_action(stack.sessions, gateway.port, stack.api_url, api.latency_s)
    progress(
        f"{side.name}: starting relaydesk serve --workers {GATEWAY_PROCESSES} "
        f"{' '.join(options.serve_args)}".rstrip()
    )
    try:
        async with gateways([gateway], stack.workdir) as pids:
            gateway_url = f"http://127.0.0.1:{gateway.port}"
            await _warm_up(stack, side, gateway_url + WHATSAPP_PATH)
            if api is not None:
                check_called(api, stack.model, "the warm-up")
                api.reset()
            stack.model.reset()
            result = await _load(stack, side, gateway_url, pids)
            run = None
            if api is not None:
                check_called(api, stack.model, "the load")
                run = tool_run(api, stack.model, side.run)
                progress(f"{side.name}: {run.line(result.replies)}")
            webchat = None
            if with_webchat:
                progress(f"{side.name}: {options.webchat} web chat visitors, twice")
                webchat = await visit_twice(
                    gateway_url, options.webchat, side.run, stack.model, WEBCHAT_TIMEOUT_S
                )
            return _SideRun(result, webchat, run)
    except ReplyBenchError as exc:
        if "unrecognized arguments: --background" in str(exc):
            raise ReplyBenchError(
                "this relaydesk serve has no --background option yet: run with --background 1"
            ) from exc
        raise


async def _load(
    stack: _Stack, side: _Side, gateway_url: str, gateway_pids: tuple[int, ...]
) -> SideResult:
    """The side's load, offered open loop; its result once answered (or stalled), with the CPU
    the gateway's processes used meanwhile."""
    options = stack.options
    load = Load(
        gateway_url + WHATSAPP_PATH,
        TWILIO_TOKEN,
        side.phones,
        options.rate,
        options.seconds,
        side.run,
    )
    stack.progress(
        f"{side.name}: {load.messages} messages at {options.rate:g}/s from "
        f"{len(side.phones)} customers"
    )
    cpu_before = tree_cpu_s(gateway_pids)
    offered = await offer(load)
    answered = await stack.replies.wait_for(load.expected(offered), options.stall_s)
    cpu_after = tree_cpu_s(gateway_pids)
    cpu_s = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    result = _result(side, offered, stack, cpu_s)
    stack.progress(
        f"{side.name}: {answered} of {len(offered)} replies, p99 {result.p99_ms:.0f} ms, "
        f"{result.replies_per_s:.2f} replies/s, peak {result.peak_in_flight} in flight"
    )
    return result


async def _forget(
    redis: Redis, sessions: async_sessionmaker[AsyncSession], sides: tuple[_Side, ...], since: str
) -> None:
    """Delete the run's jobs and keys from Redis (the database goes with the run)."""
    async with sessions() as session:
        customers = list((await session.scalars(text("SELECT id FROM customers"))).all())
    await take_jobs(redis, customers, since)
    await forget_keys(redis, customers, [side.run for side in sides])
    for side in sides:
        await forget_visitors(redis, side.run)


async def _embedded_history(
    sessions: async_sessionmaker[AsyncSession], sides: tuple[_Side, ...], progress: Progress
) -> EmbeddedHistory:
    """Every side's customers get a history with its vectors; the warm-up numbers too, so
    the warm-up message loads the model that embeds a reply's message."""
    phones = [phone for side in sides for phone in (*side.phones, side.warmup_phone)]
    progress(f"storing and embedding the history of {len(phones)} customers")
    history = await seed_embedded_history(sessions, phones, TiktokenCounter(load_encoding()))
    progress(history.line())
    return history


async def run_load_bench(options: LoadOptions, progress: Progress) -> LoadResult:
    why = await services.services_unreachable(options.postgres_url, options.redis_url)
    if why is not None:
        raise ReplyBenchError(why)
    acting = options.tool_latency_s is not None
    model = SlowModel(
        options.model_latency_s, options.stream_rate, tool=ORDER_STATUS if acting else None
    )
    api = OrdersApi(options.tool_latency_s) if options.tool_latency_s is not None else None
    replies = ReplyLog()
    with tempfile.TemporaryDirectory(prefix="relaydesk-bench-load-") as tmp:
        async with contextlib.AsyncExitStack() as stack:
            redis = Redis.from_url(options.redis_url)
            stack.push_async_callback(redis.aclose)
            twilio_api = await stack.enter_async_context(replies.serving())
            model_url = await stack.enter_async_context(model.serving())
            api_url = "" if api is None else await stack.enter_async_context(api.serving())
            database_url, engine = await stack.enter_async_context(
                services.migrated_database(options.postgres_url)
            )
            sessions = make_sessionmaker(engine)
            sides = _sides(options, model_url)
            # Before the database is dropped: it names the customers whose keys to delete.
            stack.push_async_callback(_forget, redis, sessions, sides, await stream_position(redis))
            history = None
            if options.embedded_history:
                history = await _embedded_history(sessions, sides, progress)
            shared = _Stack(
                options,
                database_url,
                sessions,
                twilio_api,
                replies,
                model,
                Path(tmp),
                progress,
                api,
                api_url,
            )
            offline = await _run_side(shared, sides[0], with_webchat=False)
            slow = await _run_side(shared, sides[1], with_webchat=options.webchat > 0)
            tools = await _run_side(shared, sides[2], with_webchat=False) if acting else None
    return LoadResult(
        offline=offline.result,
        slow=slow.result,
        webchat=slow.webchat,
        customers=options.customers,
        rate=options.rate,
        seconds=options.seconds,
        background=options.background,
        model_latency_s=options.model_latency_s,
        stream_rate=options.stream_rate,
        tools=None if tools is None else tools.result,
        tool_run=None if tools is None else tools.tool_run,
        history=history,
    )

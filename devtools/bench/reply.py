"""``relaydesk bench reply``: reply latency with and without compaction running on the same
customers.

Reply latency is what a customer waits for: from sending a signed WhatsApp webhook to the
gateway handing the reply to Twilio (a local Twilio API notes when the ``Messages.json`` create
arrives; see `devtools.bench.reply_talk`). It includes the acknowledgement, the turn being picked
up, the window, the offline model, storing the reply and the send. Each customer's first message
warms connections and caches and is left out of the figures.

Both sides run on one temporary PostgreSQL database (created next to ``--postgres-url``,
migrated, dropped) and one ``relaydesk serve --workers 2`` with the offline model, Redis and
``RELAYDESK_RUN_COMPACTION=false`` (the production shape). The database holds each customer
twice: the same long history under two identities (`devtools.bench.reply_seed`), its open
WhatsApp episode just under the compaction threshold, so that a few exchanges in, every
customer's episode needs compacting — again and again as they keep talking.

- *without*: the originals talk with no compaction worker running; their jobs pile up in the
  stream and nothing is compacted;
- *with*: the twins talk while ``relaydesk worker`` consumes the stream, so the compaction of an
  episode runs while that same customer is waiting for replies.

The originals send half their messages first, then the twins all of theirs, then the originals
the other half, so that a drift in the machine's other load over the run weighs on both sides
alike. Compactions are the compaction traces of each side's customers written by the end of its
conversations. The jobs each side enqueued are counted and removed from the stream (those of
the side without a worker before the worker starts, which would otherwise compact them), and
the run's other keys are deleted from Redis at the end.
Everything runs on one machine (load generator, gateways, worker, PostgreSQL, Redis), so what
compaction costs includes the CPU it takes from the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TiktokenCounter, load_encoding
from devtools.bench import services
from devtools.bench.harness import TWILIO_TOKEN
from devtools.bench.latencies import ReplyLatencies
from devtools.bench.reply_jobs import (
    Stored,
    forget_keys,
    stored,
    stream_position,
    take_jobs,
)
from devtools.bench.reply_seed import make_customers, seed, twins, unsummarized_tokens
from devtools.bench.reply_stack import (
    CONSUMERS,
    GATEWAY_PROCESSES,
    answering_gateway,
    gateways,
    worker,
)
from devtools.bench.reply_talk import (
    Conversation,
    ReplyBenchError,
    Sample,
    TwilioInbox,
    talk,
)
from devtools.twilio_webhook import WHATSAPP_PATH
from gateway.storage.engine import make_sessionmaker

__all__ = ["ReplyBenchError", "ReplyOptions", "ReplyResult", "run_reply_bench"]

DEFAULT_CUSTOMERS = 8
DEFAULT_MESSAGES = 40
THINK_S = 1.0
WARMUP_MESSAGES = 1
TARGET = 0.10
SETTLE_S = 0.5

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ReplyOptions:
    customers: int = DEFAULT_CUSTOMERS
    messages: int = DEFAULT_MESSAGES
    think_s: float = THINK_S
    postgres_url: str = field(default_factory=services.postgres_url_from_env)
    redis_url: str = field(default_factory=services.redis_url_from_env)

    def __post_init__(self) -> None:
        if self.customers < 1:
            raise ValueError("customers must be at least 1")
        if self.messages <= WARMUP_MESSAGES:
            raise ValueError(f"messages must be more than {WARMUP_MESSAGES} (the warm-up)")
        if self.think_s < 0:
            raise ValueError("think time must not be negative")


@dataclass(frozen=True, slots=True)
class PhaseResult(ReplyLatencies):
    latencies_ms: tuple[float, ...]  # sorted
    ack_ms: tuple[float, ...]  # sorted: the webhook's acknowledgement, part of the latency
    compactions: int
    tokens_compacted: int
    compaction_ms: int
    jobs: int

    def figures(self) -> dict[str, float | int]:
        return {
            **self.latency_figures(),
            "replies": len(self.latencies_ms),
            "compactions": self.compactions,
            "jobs": self.jobs,
        }


@dataclass(frozen=True, slots=True)
class ReplyResult:
    without: PhaseResult
    with_: PhaseResult
    customers: int
    messages: int
    unsummarized_tokens: int  # per customer, on average, at the start

    @property
    def p50_ratio(self) -> float:
        return _ratio(self.with_.p50_ms, self.without.p50_ms)

    @property
    def p99_ratio(self) -> float:
        return _ratio(self.with_.p99_ms, self.without.p99_ms)

    @property
    def within_target(self) -> bool:
        return all(abs(r - 1.0) <= TARGET for r in (self.p50_ratio, self.p99_ratio))

    def table(self) -> str:
        lines = [
            "reply latency: signed WhatsApp webhook sent -> reply handed to the Twilio API; "
            f"{GATEWAY_PROCESSES} gateway processes + PostgreSQL + Redis, offline model, "
            f"{os.cpu_count()} CPUs",
            f"{self.customers} customers per side x {self.messages} messages (the first of "
            f"each left out), ~{self.unsummarized_tokens} unsummarized tokens each at the start",
            f"{'compaction':<26} {'replies':>7} {'p50 ms':>8} {'p99 ms':>8} "
            f"{'ack p99 ms':>10} {'jobs':>6} {'compactions':>11}",
        ]
        for label, phase in (
            ("not running (no worker)", self.without),
            (f"running ({CONSUMERS} consumers)", self.with_),
        ):
            lines.append(
                f"{label:<26} {len(phase.latencies_ms):>7} {phase.p50_ms:>8.1f} "
                f"{phase.p99_ms:>8.1f} {phase.ack_p99_ms:>10.1f} {phase.jobs:>6} "
                f"{phase.compactions:>11}"
            )
        lines.append(
            f"{'with / without':<26} {'':>7} {self.p50_ratio:>8.3f} {self.p99_ratio:>8.3f}"
        )
        verdict = "within" if self.within_target else "outside"
        lines.append(f"{verdict} the target: both ratios within 1 ± {TARGET:g}")
        with_ = self.with_
        if with_.compactions:
            lines.append(
                f"the worker summarized {with_.tokens_compacted} tokens in {with_.compactions} "
                f"compactions, {with_.compaction_ms / with_.compactions:.0f} ms each on average"
            )
        return "\n".join(lines)

    def json_line(self) -> str:
        return json.dumps(
            {
                "without": self.without.figures(),
                "with": self.with_.figures(),
                "p50_ratio": round(self.p50_ratio, 3),
                "p99_ratio": round(self.p99_ratio, 3),
                "compactions": self.with_.compactions,
            }
        )


def _ratio(value: float, base: float) -> float:
    return value / base if base > 0 else 0.0


@dataclass(slots=True)
class _Group:
    """The customers of one side of the comparison, on the shared gateways."""

    name: str
    customer_ids: list[str]
    phones: list[str]
    conversation: Conversation
    seeded: Stored
    jobs: int = 0


async def _block(
    group: _Group,
    numbers: range,
    inbox: TwilioInbox,
    redis: Redis,
    progress: Progress,
) -> list[list[Sample]]:
    """The group's customers send messages ``numbers``; the latencies per customer."""
    progress(
        f"{group.name} compaction: {len(group.phones)} customers, messages "
        f"{numbers.start + 1}-{numbers.stop}"
    )
    since = await stream_position(redis)
    try:
        return await talk(inbox, group.conversation, group.phones, numbers)
    finally:
        # A job is enqueued just after its reply is sent: let the last ones arrive, then take
        # them before the worker starts (it must not compact the customers without it).
        await asyncio.sleep(SETTLE_S)
        group.jobs += await take_jobs(redis, group.customer_ids, since)


async def _result(
    group: _Group,
    latencies: list[list[Sample]],
    sessions: async_sessionmaker[AsyncSession],
    progress: Progress,
) -> PhaseResult:
    """The group's figures; compactions are those stored by now."""
    done = await stored(sessions, group.customer_ids)
    seeded = group.seeded
    if (done.customers, done.episodes) != (seeded.customers, seeded.episodes):
        raise ReplyBenchError(
            "the messages did not all reach the seeded conversations: "
            f"{done.customers} customers and {done.episodes} episodes after the run, "
            f"{seeded.customers} and {seeded.episodes} before"
        )
    measured = [sample for per in latencies for sample in per[WARMUP_MESSAGES:]]
    result = PhaseResult(
        latencies_ms=tuple(sorted(s.reply_ms for s in measured)),
        ack_ms=tuple(sorted(s.ack_ms for s in measured)),
        compactions=done.compactions - seeded.compactions,
        tokens_compacted=done.tokens_compacted - seeded.tokens_compacted,
        compaction_ms=done.compaction_ms - seeded.compaction_ms,
        jobs=group.jobs,
    )
    progress(
        f"{group.name} compaction: p50 {result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms, "
        f"{result.compactions} compactions"
    )
    return result


async def run_reply_bench(options: ReplyOptions, progress: Progress) -> ReplyResult:
    why = await services.services_unreachable(options.postgres_url, options.redis_url)
    if why is not None:
        raise ReplyBenchError(why)
    counter = TiktokenCounter(load_encoding())
    progress(f"building {options.customers} customer histories")
    originals = make_customers(options.customers, counter)
    with tempfile.TemporaryDirectory(prefix="relaydesk-bench-reply-") as tmp:
        workdir = Path(tmp)
        async with contextlib.AsyncExitStack() as stack:
            redis = Redis.from_url(options.redis_url)
            stack.push_async_callback(redis.aclose)
            inbox = TwilioInbox()
            twilio_api = await stack.enter_async_context(inbox.serving())
            database_url, engine = await stack.enter_async_context(
                services.migrated_database(options.postgres_url)
            )
            sessions = make_sessionmaker(engine)
            gateway = answering_gateway(
                "reply",
                database_url=database_url,
                redis_url=options.redis_url,
                twilio_api=twilio_api,
            )
            progress(f"seeding {options.customers} customers and their twins")
            sides = [("without", originals), ("with", twins(originals))]
            seeded_ids = [await seed(sessions, customers, counter) for _, customers in sides]
            groups = [
                _Group(
                    name=name,
                    customer_ids=ids,
                    phones=[customer.phone for customer in customers],
                    conversation=Conversation(
                        gateway_url=f"http://127.0.0.1:{gateway.port}",
                        webhook_path=WHATSAPP_PATH,
                        auth_token=TWILIO_TOKEN,
                        think_s=options.think_s,
                    ),
                    seeded=await stored(sessions, ids),
                )
                for (name, customers), ids in zip(sides, seeded_ids, strict=True)
            ]
            without, with_ = groups
            unsummarized = await unsummarized_tokens(sessions, without.customer_ids)
            since = await stream_position(redis)
            # Without, with, without: a drift of the machine's other load over the run weighs
            # on both sides alike.
            half = range(0, (options.messages + 1) // 2)
            rest = range(half.stop, options.messages)
            progress(f"starting relaydesk serve --workers {GATEWAY_PROCESSES}")
            try:
                async with gateways([gateway], workdir):
                    before = await _block(without, half, inbox, redis, progress)
                    async with worker(gateway.env, workdir):
                        every = range(options.messages)
                        during = await _block(with_, every, inbox, redis, progress)
                        # Counted while the worker runs: what it did during the conversations.
                        with_result = await _result(with_, during, sessions, progress)
                    after = await _block(without, rest, inbox, redis, progress)
                    both = [a + b for a, b in zip(before, after, strict=True)]
                    without_result = await _result(without, both, sessions, progress)
            finally:
                # Jobs enqueued after the last reply, while the gateways stopped.
                for group in groups:
                    group.jobs += await take_jobs(redis, group.customer_ids, since)
                await forget_keys(
                    redis,
                    [customer for group in groups for customer in group.customer_ids],
                    [group.conversation.run for group in groups],
                )
    return ReplyResult(
        without=replace(without_result, jobs=without.jobs),
        with_=replace(with_result, jobs=with_.jobs),
        customers=options.customers,
        messages=options.messages,
        unsummarized_tokens=unsummarized // options.customers,
    )

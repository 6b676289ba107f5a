"""The `relaydesk` command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from aiohttp import web

from gateway.config import ConfigError, Settings, load_settings
from gateway.runtime.heartbeat import STALE_AFTER_S
from gateway.runtime.logs import configure_logging
from gateway.runtime.tracing import configure_tracing

if TYPE_CHECKING:  # devtools is imported only by the commands that use it
    from devtools.eval.vectors import DiskCachedEmbedder


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.app import create_app
    from gateway.http.deadlines import keepalive_timeout_s
    from gateway.http.health import warn_if_metrics_open
    from gateway.runtime.heap import fix_allocator_thresholds

    fix_allocator_thresholds()  # before the children fork: they inherit it

    host = args.host or settings.host
    port = args.port or settings.port
    warn_if_metrics_open(settings, host)
    if args.workers > 1 or args.background > 1:
        from gateway.supervisor import refusal, serve_workers

        why = refusal(settings, args.workers, args.background)
        if why is not None:
            print(f"relaydesk: {why}", file=sys.stderr)
            return 2
        return serve_workers(settings, host, port, args.workers, args.background)
    logging.getLogger("relaydesk").info(
        "relaydesk listening", extra={"fields": {"url": f"http://{host}:{port}"}}
    )
    configure_tracing()  # in the process that serves (a forked child starts its own)
    web.run_app(
        create_app(settings),
        host=host,
        port=port,
        access_log=None,
        print=None,
        keepalive_timeout=keepalive_timeout_s(settings),
    )
    return 0


def _migrate(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.storage.engine import make_engine
    from gateway.storage.migrate import current_revision, upgrade

    async def run() -> str | None:
        engine = make_engine(settings.database_url)
        try:
            await upgrade(engine, args.revision)
            return await current_revision(engine)
        finally:
            await engine.dispose()

    revision = asyncio.run(run())
    print(f"database at revision {revision}")
    return 0


def _positive(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a number: {raw!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _sizes(raw: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part.replace("_", "")) for part in raw.split(",") if part.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a list of message counts: {raw!r}") from exc
    if not sizes or any(size < 2 for size in sizes):
        raise argparse.ArgumentTypeError("sizes must be message counts of at least 2")
    return sizes


def _bench_context(settings: Settings, args: argparse.Namespace) -> int:
    from devtools.bench import BaselineUnavailable, BenchOptions, run_context_bench

    def options() -> BenchOptions:
        defaults = BenchOptions()
        return BenchOptions(
            sizes=args.sizes or defaults.sizes,
            repeat=defaults.repeat if args.repeat is None else args.repeat,
            postgres_url=(
                defaults.postgres_url if args.postgres_url is None else args.postgres_url or None
            ),
        )

    return _run_bench(options, run_context_bench, BaselineUnavailable, args.json)


class _BenchResult(Protocol):
    def table(self) -> str: ...

    def json_line(self) -> str: ...


_Options = TypeVar("_Options")


def _run_bench(
    options: Callable[[], _Options],
    run: Callable[[_Options, Callable[[str], None]], Coroutine[Any, Any, _BenchResult]],
    refused: type[Exception],
    as_json: bool,
) -> int:
    """Run a benchmark on ``options()`` with progress on stderr; the table (and JSON line) on
    stdout. Options that refuse a value (`ValueError`) are a usage error, as ``refused`` is."""
    try:
        chosen = options()
    except ValueError as exc:
        print(f"relaydesk: {exc}", file=sys.stderr)
        return 2

    def progress(line: str) -> None:
        print(f"bench: {line}", file=sys.stderr, flush=True)

    # One log line per timed request would drown the progress lines.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        result = asyncio.run(run(chosen, progress))
    except refused as exc:
        print(f"relaydesk: {exc}", file=sys.stderr)
        return 2
    print(result.table())
    if as_json:
        print(result.json_line())
    return 0


def _rates(raw: str) -> tuple[int, ...]:
    try:
        rates = tuple(int(part.replace("_", "")) for part in raw.split(",") if part.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a list of rates: {raw!r}") from exc
    if not rates or any(rate < 1 for rate in rates):
        raise argparse.ArgumentTypeError("rates must be positive requests per second")
    return tuple(sorted(set(rates)))


def _positive_number(raw: str, what: str, *, or_zero: bool = False) -> float:
    try:
        value = float(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not {what}: {raw!r}") from exc
    if value < 0 or (value == 0 and not or_zero):
        raise argparse.ArgumentTypeError("must not be negative" if or_zero else "must be positive")
    return value


def _seconds(raw: str) -> float:
    return _positive_number(raw, "a number of seconds")


def _per_second(raw: str) -> float:
    return _positive_number(raw, "a number per second")


def _service_urls(parser: argparse.ArgumentParser, *, redis_for: str, redis_note: str = "") -> None:
    """`--postgres-url` and `--redis-url` of the benchmarks that start their own gateways."""
    parser.add_argument(
        "--postgres-url",
        help="PostgreSQL server where a temporary database is created and dropped (default "
        "RELAYDESK_BENCH_POSTGRES_URL, else the local server)",
    )
    parser.add_argument(
        "--redis-url",
        help=f"Redis for {redis_for} (default RELAYDESK_BENCH_REDIS_URL, else "
        f"redis://127.0.0.1:6379/0){redis_note}",
    )


def _bench_ingest(settings: Settings, args: argparse.Namespace) -> int:
    from devtools.bench.ingest import IngestBenchError, IngestOptions, run_ingest_bench

    def options() -> IngestOptions:
        defaults = IngestOptions()
        return IngestOptions(
            rates=args.rates or defaults.rates,
            seconds=defaults.seconds if args.seconds is None else args.seconds,
            postgres_url=args.postgres_url or defaults.postgres_url,
            redis_url=args.redis_url or defaults.redis_url,
            senders=args.senders or defaults.senders,
            baseline=Path(args.baseline) if args.baseline else None,
            rounds=args.rounds or defaults.rounds,
            background=args.background or defaults.background,
        )

    return _run_bench(options, run_ingest_bench, IngestBenchError, args.json)


def _bench_embeddings(settings: Settings, args: argparse.Namespace) -> int:
    from devtools.bench.embeddings_bench import (
        EmbeddingsBenchError,
        EmbeddingsOptions,
        run_embeddings_bench,
    )

    def options() -> EmbeddingsOptions:
        defaults = EmbeddingsOptions()
        return EmbeddingsOptions(
            messages=args.messages or defaults.messages,
            chunks=args.chunks or defaults.chunks,
            queries=args.queries or defaults.queries,
        )

    return _run_bench(options, run_embeddings_bench, EmbeddingsBenchError, args.json)


# The options of `bench reply` that only its load mode (`--model-latency`) takes.
_LOAD_ONLY = (
    "stream_rate",
    "rate",
    "seconds",
    "background",
    "webchat",
    "tool_latency",
    "embedded_history",
)


def _bench_reply(settings: Settings, args: argparse.Namespace) -> int:
    from devtools.bench.reply import ReplyBenchError, ReplyOptions, run_reply_bench

    if args.model_latency is not None:
        return _bench_reply_load(args)
    given = [name for name in _LOAD_ONLY if getattr(args, name) is not None]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        print(f"relaydesk: {flags} need --model-latency (the load mode)", file=sys.stderr)
        return 2

    def options() -> ReplyOptions:
        defaults = ReplyOptions()
        return ReplyOptions(
            customers=args.customers or defaults.customers,
            messages=args.messages or defaults.messages,
            postgres_url=args.postgres_url or defaults.postgres_url,
            redis_url=args.redis_url or defaults.redis_url,
        )

    return _run_bench(options, run_reply_bench, ReplyBenchError, args.json)


def _bench_reply_load(args: argparse.Namespace) -> int:
    from devtools.bench.reply_load import LoadOptions, ReplyBenchError, run_load_bench

    if args.messages is not None:
        print(
            "relaydesk: --messages is not for the load mode (use --rate and --seconds)",
            file=sys.stderr,
        )
        return 2

    def options() -> LoadOptions:
        defaults = LoadOptions(model_latency_s=args.model_latency)
        return LoadOptions(
            model_latency_s=args.model_latency,
            stream_rate=args.stream_rate,
            customers=args.customers or defaults.customers,
            rate=defaults.rate if args.rate is None else args.rate,
            seconds=defaults.seconds if args.seconds is None else args.seconds,
            background=defaults.background if args.background is None else args.background,
            webchat=defaults.webchat if args.webchat is None else args.webchat,
            tool_latency_s=args.tool_latency,
            embedded_history=bool(args.embedded_history),
            postgres_url=args.postgres_url or defaults.postgres_url,
            redis_url=args.redis_url or defaults.redis_url,
        )

    return _run_bench(options, run_load_bench, ReplyBenchError, args.json)


def _bench_chaos(settings: Settings, args: argparse.Namespace) -> int:
    from dataclasses import replace

    from devtools.bench.chaos import ChaosBenchError, ChaosOptions, run_chaos_bench

    def options() -> ChaosOptions:
        defaults = ChaosOptions()
        given = {
            name: getattr(args, name)
            for name in (
                "rate",
                "customers",
                "warmup_s",
                "soak_s",
                "faults",
                "fault_gap_s",
                "settle_s",
                "model_latency_s",
                "logs_dir",
            )
            if getattr(args, name) is not None
        }
        return replace(defaults, **given)

    return _run_bench(options, run_chaos_bench, ChaosBenchError, args.json)


def _faults(raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _non_negative_seconds(raw: str) -> float:
    return _positive_number(raw, "a number of seconds", or_zero=True)


def _add_embeddings_bench(benchmarks: Any) -> None:
    bench = benchmarks.add_parser(
        "embeddings",
        help="the offline model's cost: background rows/s and CPU per 1,000 rows, a reply's "
        "message vector p50/p99 and CPU (and from the cache), the read of a customer's stored "
        "vectors (temporary SQLite database)",
    )
    bench.add_argument(
        "--json", action="store_true", help="also print one JSON object as the last line"
    )
    bench.add_argument(
        "--messages",
        type=_positive,
        help="messages over 4 customers embedded by the background loop (default 1000, "
        "at least 20)",
    )
    bench.add_argument(
        "--chunks", type=_positive, help="knowledge chunks embedded after them (default 200)"
    )
    bench.add_argument(
        "--queries",
        type=_positive,
        help="distinct messages embedded as a reply embeds its own (default 100)",
    )
    bench.set_defaults(run=_bench_embeddings)


def _add_chaos_bench(benchmarks: Any) -> None:
    chaos = benchmarks.add_parser(
        "chaos",
        help="customers at a steady rate through faults (processes killed, Redis, the worker "
        "and PostgreSQL stopped) on serve --workers 2 --background 2 + relaydesk worker + a "
        "private PostgreSQL and Redis: lost, duplicated, unanswered, answered twice or out of "
        "order, unrecorded sends, latency per phase, recovery per fault, memory growth",
    )
    chaos.add_argument(
        "--json", action="store_true", help="also print one JSON object as the last line"
    )
    chaos.add_argument(
        "--rate", type=_per_second, help="messages per second, all customers (default 40)"
    )
    chaos.add_argument("--customers", type=_positive, help="customers sending (default 300)")
    chaos.add_argument(
        "--warmup-s", type=_non_negative_seconds, help="seconds of warm-up (default 60)"
    )
    chaos.add_argument(
        "--soak-s",
        type=_non_negative_seconds,
        help="seconds of load without faults after the warm-up (default 600)",
    )
    chaos.add_argument(
        "--faults",
        type=_faults,
        help="comma-separated, in order (default all: background-kill,gateway-kill,"
        "redis-stop,worker-stop,postgres-stop)",
    )
    chaos.add_argument(
        "--fault-gap-s",
        type=_non_negative_seconds,
        help="seconds of recovery after each fault (default 60)",
    )
    chaos.add_argument(
        "--settle-s",
        type=_non_negative_seconds,
        help="at most this long after the last fault for everything to be answered (default 420)",
    )
    chaos.add_argument(
        "--model-latency",
        dest="model_latency_s",
        type=_non_negative_seconds,
        metavar="S",
        help="0: the offline model (default); else a local OpenAI-compatible model that "
        "answers after S seconds",
    )
    chaos.add_argument(
        "--logs",
        dest="logs_dir",
        metavar="DIR",
        help="keep the processes' logs in DIR (default: a temporary directory, removed)",
    )
    chaos.set_defaults(run=_bench_chaos)


def _demo(settings: Settings, args: argparse.Namespace) -> int:
    import tempfile

    from devtools.demo import main as demo_main

    if args.dir:
        return demo_main(Path(args.dir), sys.stdout)
    with tempfile.TemporaryDirectory(prefix="relaydesk-demo-") as workdir:
        return demo_main(Path(workdir), sys.stdout)


def _telegram_set_webhook(settings: Settings, args: argparse.Namespace) -> int:
    from telegram.error import TelegramError

    from channels.telegram import ALLOWED_UPDATES, SECRET_TOKEN, make_bot
    from gateway.http.webhooks import TELEGRAM_PATH

    token = settings.telegram_bot_token.get_secret_value() if settings.telegram_bot_token else ""
    secret = settings.telegram_webhook_secret
    secret_token = secret.get_secret_value() if secret else ""
    public = settings.public_url
    url = args.url or (f"{public}{TELEGRAM_PATH}" if public else "")
    missing = [
        name
        for name, value in (
            ("TELEGRAM_BOT_TOKEN", token),
            ("TELEGRAM_WEBHOOK_SECRET", secret_token),
            ("RELAYDESK_PUBLIC_URL (or --url)", url),
        )
        if not value
    ]
    if missing:
        print(f"relaydesk: set {', '.join(missing)} first", file=sys.stderr)
        return 2
    if not SECRET_TOKEN.fullmatch(secret_token):
        print(
            "relaydesk: TELEGRAM_WEBHOOK_SECRET must be 1-256 characters of A-Z, a-z, 0-9, _ and -",
            file=sys.stderr,
        )
        return 2

    async def register() -> bool:
        async with make_bot(token, settings.telegram_api_base) as bot:
            return await bot.set_webhook(
                url=url,
                secret_token=secret_token,
                allowed_updates=list(ALLOWED_UPDATES),
                drop_pending_updates=args.drop_pending or None,
            )

    try:
        done = asyncio.run(register())
    except TelegramError as exc:
        reason = str(exc).replace(token, "<token>")
        print(f"relaydesk: Telegram refused the webhook: {reason}", file=sys.stderr)
        return 1
    if not done:
        print("relaydesk: Telegram did not confirm the webhook", file=sys.stderr)
        return 1
    print(f"telegram webhook set: {url} (updates: {', '.join(ALLOWED_UPDATES)})")
    return 0


def _worker(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.memory.cli import run_worker
    from gateway.runtime.heap import fix_allocator_thresholds

    fix_allocator_thresholds()
    if args.nice:
        # Compaction is background work: on a machine shared with gateways, the kernel should
        # favour the processes answering customers.
        os.nice(args.nice)

    configure_tracing()
    return asyncio.run(run_worker(settings, args.count))


def _background(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.supervisor import background_refusal, run_background

    why = background_refusal(settings)
    if why is not None:
        print(f"relaydesk: {why}", file=sys.stderr)
        return 2
    from gateway.runtime.heartbeat import heartbeat_path

    run_background(
        settings, args.nice, heartbeat=heartbeat_path(settings.heartbeat_dir, "background")
    )
    return 0


def _health(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.runtime.heartbeat import heartbeat_path, read_pulse

    pulse = read_pulse(
        heartbeat_path(settings.heartbeat_dir, args.role), stale_after_s=args.max_age
    )
    print(f"relaydesk {args.role}: {'healthy' if pulse.fresh else 'unhealthy'}, {pulse.detail}")
    return 0 if pulse.fresh else 1


def _env_example(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.env_example import render_env_example

    sys.stdout.write(render_env_example())
    return 0


def _rebuild(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.memory.cli import rebuild

    return asyncio.run(rebuild(settings, args.customer))


def _customer_export(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.customers.cli import export

    return asyncio.run(export(settings, args.customer_id, actor=args.actor))


def _customer_erase(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.customers.cli import erase

    if not args.reason.strip():
        print("relaydesk: --reason must not be blank", file=sys.stderr)
        return 2
    return asyncio.run(erase(settings, args.customer_id, reason=args.reason, actor=args.actor))


def _operator(settings: Settings, args: argparse.Namespace) -> int:
    from gateway.operators.cli import run

    return run(settings, args)


def _eval_embedder(cache: str | None) -> DiskCachedEmbedder:
    """The evaluations' embedder: the offline model at normal priority (an evaluation is the
    work in front), its vectors kept on disk between runs (``--embedding-cache``)."""
    from devtools.eval.vectors import DiskCachedEmbedder, default_cache_dir
    from gateway.embeddings.offline import OfflineEmbedder

    cache_dir = Path(cache) if cache else default_cache_dir()
    return DiskCachedEmbedder(OfflineEmbedder(niceness=0), cache_dir)


def _eval_locomo(settings: Settings, args: argparse.Namespace) -> int:
    import time

    from devtools.eval.locomo import SPLITS, LocomoDataMissing, data_path, load
    from devtools.eval.report import EmbeddingCost, summarize
    from devtools.eval.run import evaluate

    try:
        path = data_path(args.data)
    except LocomoDataMissing as exc:
        print(f"relaydesk: {exc}", file=sys.stderr)
        return 2
    if args.window < 1024:
        print("relaydesk: --window must be at least 1024 tokens", file=sys.stderr)
        return 2

    def progress(line: str) -> None:
        print(f"eval: {line}", file=sys.stderr, flush=True)

    logging.getLogger("relaydesk.memory").setLevel(logging.WARNING)
    started = time.perf_counter()
    conversations = load(path, SPLITS[args.split])
    embedder = None
    if args.recall != "lexical":
        embedder = _eval_embedder(args.embedding_cache)
    outcomes = asyncio.run(
        evaluate(
            conversations,
            window=args.window,
            progress=progress,
            recall=args.recall,
            embedder=embedder,
        )
    )
    embedding = None
    if embedder is not None:
        asyncio.run(embedder.close())
        embedding = EmbeddingCost(
            round(embedder.seconds, 1), embedder.counts.computed, embedder.counts.cached
        )
    report = summarize(
        outcomes,
        split=args.split,
        window=args.window,
        seconds=time.perf_counter() - started,
        embedding=embedding,
    )
    print(report.table())
    if args.json:
        print(report.json_line())
    return 0


def _eval_knowledge(settings: Settings, args: argparse.Namespace) -> int:
    import time

    from context import TiktokenCounter, load_encoding
    from devtools.eval.faq import CorpusMissing, load_corpus
    from devtools.eval.knowledge import (
        HYBRID,
        LEXICAL,
        KnowledgeOutcome,
        evaluate_knowledge,
        knowledge_budget,
    )
    from devtools.eval.knowledge_report import summarize_knowledge
    from devtools.eval.report import EmbeddingCost

    started = time.perf_counter()
    try:
        corpus = load_corpus(Path(args.corpus))
    except CorpusMissing as exc:
        print(f"relaydesk: {exc}", file=sys.stderr)
        return 2
    methods = {"lexical": (LEXICAL,), "hybrid": (HYBRID,), "both": (LEXICAL, HYBRID)}[args.mode]
    embedder = None
    if HYBRID in methods:
        embedder = _eval_embedder(args.embedding_cache)

    async def run() -> tuple[KnowledgeOutcome, ...]:
        try:
            return await evaluate_knowledge(
                corpus, TiktokenCounter(load_encoding()), methods=methods, embedder=embedder
            )
        finally:
            if embedder is not None:
                await embedder.close()

    outcomes = asyncio.run(run())
    embedding = None
    if embedder is not None:
        embedding = EmbeddingCost(
            round(embedder.seconds, 1), embedder.counts.computed, embedder.counts.cached
        )
    report = summarize_knowledge(
        corpus,
        outcomes,
        methods=methods,
        budget=knowledge_budget(),
        seconds=time.perf_counter() - started,
        embedding=embedding,
    )
    print(report.table())
    if args.json:
        print(report.json_line())
    return 0


def _add_nice(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--nice",
        type=int,
        default=10,
        choices=range(0, 20),
        metavar="0-19",
        help="lower this process's CPU priority by this much (default 10; 0 keeps it)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="relaydesk", description="Multichannel chatbot gateway with budgeted context."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the gateway (HTTP, webhooks, web chat)")
    serve.add_argument("--host", help="bind address (default RELAYDESK_HOST)")
    serve.add_argument("--port", type=int, help="port (default RELAYDESK_PORT)")
    serve.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="gateway processes sharing the port (more than 1 needs PostgreSQL and Redis)",
    )
    serve.add_argument(
        "--background",
        type=_positive,
        default=1,
        help="background processes storing the inbox and answering turns beside the gateway "
        "processes (default 1; more than 1 needs PostgreSQL and Redis)",
    )
    serve.set_defaults(run=_serve)

    migrate = commands.add_parser("migrate", help="upgrade the database schema")
    migrate.add_argument("--revision", default="head", help="target revision (default head)")
    migrate.set_defaults(run=_migrate)

    worker = commands.add_parser(
        "worker", help="consume compaction jobs from Redis (several per machine if you like)"
    )
    worker.add_argument("--count", type=int, default=1, help="consumers in this process")
    _add_nice(worker)
    worker.set_defaults(run=_worker)

    background = commands.add_parser(
        "background",
        help="store the inbox, answer turns and retry deliveries for gateways started with "
        "RELAYDESK_RUN_BACKGROUND=false (no port; needs PostgreSQL and Redis)",
    )
    _add_nice(background)
    background.set_defaults(run=_background)

    health = commands.add_parser(
        "health",
        help="exit 0 when a background or worker process's heartbeat is fresh, 1 when stale "
        "(its container's health check)",
    )
    health.add_argument("role", choices=("background", "worker"))
    health.add_argument(
        "--max-age",
        type=_seconds,
        default=STALE_AFTER_S,
        help=f"seconds after which the heartbeat is stale (default {STALE_AFTER_S:.0f})",
    )
    health.set_defaults(run=_health)

    config = commands.add_parser("config", help="process settings")
    config_commands = config.add_subparsers(dest="config_command", required=True)
    env_example = config_commands.add_parser(
        "env-example",
        help="print docker/.env.example: every RELAYDESK_* variable with its default",
    )
    env_example.set_defaults(run=_env_example)

    compaction = commands.add_parser("compaction", help="memory maintenance")
    compaction_commands = compaction.add_subparsers(dest="compaction_command", required=True)
    rebuild = compaction_commands.add_parser(
        "rebuild", help="redo a customer's summaries and facts from the raw messages"
    )
    rebuild.add_argument("--customer", required=True, help="customer id")
    rebuild.set_defaults(run=_rebuild)

    customer = commands.add_parser("customer", help="customer data: export and erasure")
    customer_commands = customer.add_subparsers(dest="customer_command", required=True)
    customer_export = customer_commands.add_parser(
        "export", help="print everything held about a customer as one JSON document"
    )
    customer_export.add_argument("customer_id")
    customer_export.add_argument("--actor", default="cli", help="who asks (audited)")
    customer_export.set_defaults(run=_customer_export)
    customer_erase = customer_commands.add_parser(
        "erase", help="erase a customer everywhere (an audit tombstone remains)"
    )
    customer_erase.add_argument("customer_id")
    customer_erase.add_argument("--reason", required=True, help="why (audited)")
    customer_erase.add_argument("--actor", required=True, help="who erases (audited)")
    customer_erase.set_defaults(run=_customer_erase)

    operator = commands.add_parser("operator", help="operator console accounts")
    operator_commands = operator.add_subparsers(dest="operator_command", required=True)
    from gateway.operators.cli_arguments import add_arguments as add_operator_commands

    add_operator_commands(operator_commands)
    operator.set_defaults(run=_operator)

    from gateway.settings_admin.cli import add_settings_commands

    add_settings_commands(commands)

    from gateway.knowledge.cli_commands import add_knowledge_commands

    add_knowledge_commands(commands)

    demo = commands.add_parser(
        "demo", help="run a short multichannel story offline and print the profile and window"
    )
    demo.add_argument("--dir", help="keep the demo database here (default: a temporary folder)")
    demo.set_defaults(run=_demo)

    telegram = commands.add_parser("telegram", help="Telegram bot administration")
    telegram_commands = telegram.add_subparsers(dest="telegram_command", required=True)
    set_webhook = telegram_commands.add_parser(
        "set-webhook",
        help="register this gateway's webhook (with TELEGRAM_WEBHOOK_SECRET) with Telegram",
    )
    set_webhook.add_argument(
        "--url", help="the webhook URL (default RELAYDESK_PUBLIC_URL + /webhooks/telegram)"
    )
    set_webhook.add_argument(
        "--drop-pending",
        action="store_true",
        help="drop the updates Telegram queued while no webhook was reachable",
    )
    set_webhook.set_defaults(run=_telegram_set_webhook)

    bench = commands.add_parser("bench", help="benchmarks")
    benchmarks = bench.add_subparsers(dest="benchmark", required=True)
    context = benchmarks.add_parser(
        "context",
        help="window build time vs LangChain trim_messages and a naive builder, and the "
        "POST /v1/context latency, by history size",
    )
    context.add_argument(
        "--json", action="store_true", help="also print one JSON object as the last line"
    )
    context.add_argument(
        "--sizes",
        type=_sizes,
        help="stored messages of the customer, comma-separated (default 100,1000,10000,100000)",
    )
    context.add_argument(
        "--repeat",
        type=int,
        help="timed calls per figure (default 15; from 50k messages the two baselines "
        "repeat at most 5 times)",
    )
    context.add_argument(
        "--postgres-url",
        help="PostgreSQL server where a temporary database is created and dropped (default "
        "RELAYDESK_BENCH_POSTGRES_URL, else the local server); an empty value skips PostgreSQL",
    )
    context.set_defaults(run=_bench_context)
    ingest = benchmarks.add_parser(
        "ingest",
        help="signed Twilio webhooks at rising rates against 2 gateway processes + PostgreSQL "
        "+ Redis: acknowledged/s, p50/p99, CPU per message, lost and duplicated messages, bare "
        "aiohttp ceiling",
    )
    ingest.add_argument(
        "--json", action="store_true", help="also print one JSON object as the last line"
    )
    ingest.add_argument(
        "--rates",
        type=_rates,
        help="offered webhooks per second (default 250,1000,1250,2000)",
    )
    ingest.add_argument("--seconds", type=_seconds, help="seconds per rate (default 5)")
    ingest.add_argument(
        "--senders",
        type=_positive,
        help="customers the webhooks come from, in turn (default 500; each one's turns are "
        "answered in order)",
    )
    ingest.add_argument(
        "--baseline",
        metavar="DIR",
        help="also run the same load against the gateway of the source tree DIR (PYTHONPATH=DIR) "
        "and print before | after | ratio",
    )
    ingest.add_argument(
        "--rounds",
        type=_positive,
        help="repeat each side this many times, alternating which goes first; medians are "
        "compared (default 1)",
    )
    ingest.add_argument(
        "--background",
        type=_positive,
        help="background processes storing and answering beside the 2 gateway processes "
        "(serve --background; default 1)",
    )
    _service_urls(ingest, redis_for="the gateway processes")
    ingest.set_defaults(run=_bench_ingest)
    reply = benchmarks.add_parser(
        "reply",
        help="reply latency p50/p99 with and without a compaction worker running on the same "
        "customers (2 gateway processes + PostgreSQL + Redis), and the compactions done",
    )
    reply.add_argument(
        "--json", action="store_true", help="also print one JSON object as the last line"
    )
    reply.add_argument(
        "--customers",
        type=_positive,
        help="customers per side, talking at once (default 8; with --model-latency 40)",
    )
    reply.add_argument("--messages", type=_positive, help="messages per customer (default 40)")
    load = reply.add_argument_group(
        "load mode",
        "with --model-latency: the same open-loop load of signed WhatsApp webhooks against the "
        "offline model, then a local model that waits S seconds; replies/s, p50/p99, peak "
        "model calls in flight",
    )
    load.add_argument(
        "--model-latency",
        type=_seconds,
        metavar="S",
        help="seconds the model waits before its first token (turns the load mode on)",
    )
    load.add_argument(
        "--stream-rate",
        type=_per_second,
        metavar="TOKENS_PER_S",
        help="tokens per second after the first (default: the rest at once)",
    )
    load.add_argument(
        "--rate", type=_per_second, metavar="R", help="messages per second offered (default 20)"
    )
    load.add_argument("--seconds", type=_seconds, metavar="T", help="seconds of load (default 5)")
    load.add_argument(
        "--background",
        type=_positive,
        metavar="M",
        help="background processes of the gateway (serve --background M; default 2)",
    )
    load.add_argument(
        "--webchat",
        type=_positive,
        metavar="K",
        help="new web chat visitors timing the first streamed token after the load, twice (the "
        "gateway's first round reported beside the measured second; default none)",
    )
    load.add_argument(
        "--tool-latency",
        type=_seconds,
        metavar="S",
        help="a third side: the slow model calls a read action once per turn, a local API "
        "answering it after S s; reported beside the slow side without it (replies/s ratio, "
        "p99 against 2 x model + S + 1 s, the calls made)",
    )
    load.add_argument(
        "--embedded-history",
        action="store_true",
        default=None,
        help="give each customer of the load a stored history whose vectors are computed "
        "before the load, so every reply embeds its message for hybrid recall",
    )
    _service_urls(
        reply,
        redis_for="the gateway processes and the worker",
        redis_note="; the worker consumes that database's one compaction stream, so give the "
        "run a database no other gateway uses",
    )
    reply.set_defaults(run=_bench_reply)
    _add_chaos_bench(benchmarks)
    _add_embeddings_bench(benchmarks)

    evaluation = commands.add_parser("eval", help="offline evaluations of the window")
    evaluations = evaluation.add_subparsers(dest="evaluation", required=True)
    locomo = evaluations.add_parser(
        "locomo",
        help="LoCoMo: evidence and answer in the window vs recency, BM25 and the full history",
    )
    locomo.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    locomo.add_argument("--window", type=int, default=8192, help="model window (default 8192)")
    locomo.add_argument(
        "--data",
        help="locomo10.json (default $RELAYDESK_LOCOMO_PATH, else "
        "../shared/eval/locomo/locomo10.json from the current directory)",
    )
    locomo.add_argument(
        "--json", action="store_true", help="also print one JSON object as the last line"
    )
    locomo.add_argument(
        "--recall",
        choices=("lexical", "hybrid", "both"),
        default="lexical",
        help="our window's recall: lexical (BM25), hybrid (BM25 fused with the offline "
        "embedding model) or both side by side (default lexical)",
    )
    locomo.add_argument(
        "--embedding-cache",
        help="folder of the vectors kept between runs (default "
        "$XDG_CACHE_HOME/relaydesk/eval-embeddings, else ~/.cache/relaydesk/eval-embeddings)",
    )
    locomo.set_defaults(run=_eval_locomo)
    knowledge_eval = evaluations.add_parser(
        "knowledge",
        help="the knowledge slice on an FAQ: gold document in the slice, MRR, citations, audiences",
    )
    knowledge_eval.add_argument(
        "--corpus",
        required=True,
        help="the Debian FAQ in plain text (debian-faq.en.txt.gz of the debian-faq package)",
    )
    knowledge_eval.add_argument(
        "--mode",
        choices=("lexical", "hybrid", "both"),
        default="both",
        help="rank the chunks lexically (BM25), hybrid (BM25 fused with the offline "
        "embedding model) or both side by side (default both)",
    )
    knowledge_eval.add_argument(
        "--embedding-cache",
        help="folder of the vectors kept between runs (default "
        "$XDG_CACHE_HOME/relaydesk/eval-embeddings, else ~/.cache/relaydesk/eval-embeddings)",
    )
    knowledge_eval.add_argument(
        "--json", action="store_true", help="also print one JSON object as the last line"
    )
    knowledge_eval.set_defaults(run=_eval_knowledge)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"relaydesk: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level, levels=settings.logger_levels)
    result: int = args.run(settings, args)
    return result


if __name__ == "__main__":
    sys.exit(main())

"""``relaydesk bench context``: our window build against ``trim_messages`` and a naive builder.

For each size (stored messages of one customer) the run measures, side by side at the same
input budget (the default tenant's 8k window):

* ``ours_assemble_sqlite`` / ``ours_assemble_postgres`` — `assemble_context` on a populated
  database, as the gateway runs it: storage reads of only what the window needs, then the build;
* ``ours_build_window`` — the pure `build_window` on the inputs that call produced;
* ``trim_messages`` — LangChain's trimmer over the whole history (`devtools.bench.baselines`);
* ``naive`` — re-tokenize the whole history and keep the newest messages that fit;
* ``e2e_sqlite`` / ``e2e_postgres`` — ``POST /v1/context`` through the running app.

Every figure is the median of repeated calls. PostgreSQL parts are skipped, with the reason,
when the server cannot be reached.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import tiktoken
from sqlalchemy.ext.asyncio import AsyncEngine

from context import TiktokenCounter, load_encoding
from devtools.bench import baselines, e2e, measure, phrases, services
from devtools.bench.history import SyntheticHistory, count_tokens, make_history
from devtools.bench.populate import SeededCustomer, populate
from devtools.bench.report import BenchResult, SizeResult
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.migrate import upgrade
from gateway.tenants import TenantSettings
from gateway.turns.window import budget_for

DEFAULT_SIZES = (100, 1_000, 10_000, 100_000)
DEFAULT_REPEAT = 15
# trim_messages and the naive builder take seconds per call at 100k messages: from this size
# on they repeat at most BASELINE_LARGE_REPEAT times (and skip the warm-up call).
BASELINE_LARGE_SIZE = 50_000
BASELINE_LARGE_REPEAT = 5

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class BenchOptions:
    sizes: tuple[int, ...] = DEFAULT_SIZES
    repeat: int = DEFAULT_REPEAT
    # None: PostgreSQL is not measured (reported as skipped).
    postgres_url: str | None = field(default_factory=services.postgres_url_from_env)

    def __post_init__(self) -> None:
        if not self.sizes or any(size < 2 for size in self.sizes):
            raise ValueError("sizes must be message counts of at least 2")
        if self.repeat < 1:
            raise ValueError("repeat must be at least 1")

    def baseline_repeat(self, size: int) -> int:
        return (
            self.repeat if size < BASELINE_LARGE_SIZE else min(self.repeat, BASELINE_LARGE_REPEAT)
        )


def _silent(_: str) -> None:
    return None


async def run_context_bench(options: BenchOptions, progress: Progress = _silent) -> BenchResult:
    """Run every measurement; raises `baselines.BaselineUnavailable` without langchain-core."""
    langchain = baselines.langchain_version()
    encoding = load_encoding()
    counter = TiktokenCounter(encoding)
    settings = TenantSettings()
    input_budget = budget_for(settings).input_budget
    sizes = tuple(sorted(set(options.sizes)))
    histories = {size: make_history(size) for size in sizes}
    tokens = {size: count_tokens(histories[size], counter) for size in sizes}
    results = {
        size: SizeResult(
            size=size,
            episodes=len(histories[size].episodes),
            history_tokens=sum(map(sum, tokens[size])),
        )
        for size in sizes
    }
    populate_seconds: dict[str, float] = {}

    async def on_database(backend: str, url: str) -> None:
        engine = make_engine(url)
        try:
            await upgrade(engine)
            customers = await _populate_all(engine, histories, tokens, settings, counter)
            populate_seconds[backend] = round(sum(c.seconds for c in customers.values()), 2)
            progress(f"{backend}: populated in {populate_seconds[backend]:.1f} s")
            await _time_ours(
                engine, backend, customers, settings, counter, options.repeat, results, progress
            )
        finally:
            await engine.dispose()
        async with e2e.running_gateway(url) as base_url, httpx.AsyncClient() as client:
            timed = await e2e.time_context_endpoint(
                client,
                base_url,
                {size: customer.external_id for size, customer in customers.items()},
                phrases.CURRENT_MESSAGE,
                options.repeat,
            )
        for size, (timing, window) in timed.items():
            results[size].record(f"e2e_{backend}", timing)
            results[size].windows[f"e2e_{backend}"] = window.estimated_tokens
            progress(f"{backend}: POST /v1/context at {size}: {timing.median_ms:.2f} ms")

    with tempfile.TemporaryDirectory(prefix="relaydesk-bench-") as directory:
        await on_database("sqlite", f"sqlite+aiosqlite:///{Path(directory) / 'bench.db'}")

    _time_baselines(
        histories, counter, encoding, settings.instruction, input_budget, options, results, progress
    )

    postgres_skipped: str | None = None
    if options.postgres_url is None:
        postgres_skipped = "not requested (empty --postgres-url)"
    else:
        postgres_skipped = await services.postgres_unreachable(options.postgres_url)
        if postgres_skipped is None:
            async with services.temporary_database(options.postgres_url) as url:
                await on_database("postgres", url)
    if postgres_skipped is not None:
        progress(f"postgres: skipped — {postgres_skipped}")

    return BenchResult(
        sizes=sizes,
        results=tuple(results[size] for size in sizes),
        input_budget=input_budget,
        window=settings.window,
        encoding=encoding.name,
        langchain_core=langchain,
        repeat=options.repeat,
        baseline_repeats={size: options.baseline_repeat(size) for size in sizes},
        postgres_skipped=postgres_skipped,
        populate_seconds=populate_seconds,
    )


async def _populate_all(
    engine: AsyncEngine,
    histories: dict[int, SyntheticHistory],
    tokens: dict[int, tuple[tuple[int, ...], ...]],
    settings: TenantSettings,
    counter: TiktokenCounter,
) -> dict[int, SeededCustomer]:
    """One customer per size, all in the same database (each size reads a shared table)."""
    sessions = make_sessionmaker(engine)
    return {
        size: await populate(sessions, history, tokens[size], settings, counter)
        for size, history in histories.items()
    }


async def _time_ours(
    engine: AsyncEngine,
    backend: str,
    customers: dict[int, SeededCustomer],
    settings: TenantSettings,
    counter: TiktokenCounter,
    repeat: int,
    results: dict[int, SizeResult],
    progress: Progress,
) -> None:
    sessions = make_sessionmaker(engine)
    message = phrases.CURRENT_MESSAGE
    timed = await measure.time_assemble(sessions, customers, settings, counter, message, repeat)
    for size, (timing, window) in timed.items():
        results[size].record(f"ours_assemble_{backend}", timing)
        results[size].windows[f"ours_assemble_{backend}"] = window.report.estimated_tokens
        progress(f"{backend}: assemble_context at {size}: {timing.median_ms:.2f} ms")
    if backend != "sqlite":
        return
    inputs = {
        size: await measure.capture_request(sessions, customer, settings, counter, message)
        for size, customer in customers.items()
    }
    for size, (timing, window) in measure.time_build_window(inputs, counter, repeat).items():
        results[size].record("ours_build_window", timing)
        results[size].windows["ours_build_window"] = window.report.estimated_tokens
        results[size].turns_loaded = len(inputs[size][0].episode.turns)


def _time_baselines(
    histories: dict[int, SyntheticHistory],
    counter: TiktokenCounter,
    encoding: tiktoken.Encoding,
    instruction: str,
    input_budget: int,
    options: BenchOptions,
    results: dict[int, SizeResult],
    progress: Progress,
) -> None:
    for size, history in histories.items():
        turns: Sequence[tuple[baselines.Role, str]] = list(history.turns())
        repeat = options.baseline_repeat(size)
        warmup = 1 if size < BASELINE_LARGE_SIZE else 0
        trim = baselines.TrimMessagesBaseline(
            encoding, instruction, turns, phrases.CURRENT_MESSAGE, input_budget
        )
        [(timing, kept)] = measure.time_sync({size: trim}, repeat, warmup=warmup).values()
        results[size].record("trim_messages", timing)
        results[size].windows["trim_messages"] = trim.window(kept).tokens
        progress(f"trim_messages at {size}: {timing.median_ms:.1f} ms")
        del trim, kept
        naive = baselines.NaiveBuilder(
            counter, instruction, turns, phrases.CURRENT_MESSAGE, input_budget
        )
        [(timing, built)] = measure.time_sync({size: naive}, repeat, warmup=warmup).values()
        results[size].record("naive", timing)
        results[size].windows["naive"] = built.tokens
        progress(f"naive at {size}: {timing.median_ms:.1f} ms")

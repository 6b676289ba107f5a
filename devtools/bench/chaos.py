"""``relaydesk bench chaos``: a steady load of customers through faults, and proof that nothing
was lost, stored or answered twice, left unanswered or answered out of order.

The run starts everything itself (`devtools.bench.chaos_stack`): a private PostgreSQL cluster
and Redis, the local Twilio API calling back with signed status reports, ``relaydesk serve
--workers 2 --background 2`` and a ``relaydesk worker``, kept running as an orchestrator keeps
them. Customers send signed WhatsApp webhooks at a steady rate, retrying what is not
acknowledged as Twilio does (`devtools.bench.chaos_load`). The phases:

1. warm-up (``warmup_s``), then a fault-free soak (``soak_s``): the baseline latency and the
   memory growth of every process (`devtools.bench.chaos_rss`);
2. each fault in turn (`devtools.bench.chaos_faults`), ``fault_gap_s`` of recovery after each;
3. the settle: no new messages; until every message was acknowledged and the gateway has
   nothing left to store, answer or send — at most ``settle_s``.

Then the gateway's rows are read and the checks computed from the records
(`devtools.bench.chaos_checks`, `devtools.bench.chaos_timeline`), reported by
`devtools.bench.chaos_report`. The figures are those of the whole box: the load, the local
Twilio and the servers share its CPUs.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from devtools.bench.chaos_faults import inject
from devtools.bench.chaos_load import ChaosLoad, customer_numbers
from devtools.bench.chaos_options import FAULTS, ChaosOptions
from devtools.bench.chaos_records import Fault, Phase, Recorded, RssSample
from devtools.bench.chaos_report import ChaosResult
from devtools.bench.chaos_rss import sample_every
from devtools.bench.chaos_snapshot import read_snapshot
from devtools.bench.chaos_stack import ChaosBenchError, ChaosStack, chaos_stack
from devtools.bench.ingest import unsettled
from devtools.private_servers import postgres_missing, redis_missing

__all__ = ["FAULTS", "ChaosBenchError", "ChaosOptions", "ChaosResult", "run_chaos_bench"]

# After the settle, for the status callbacks under way to land before the rows are read.
CALLBACK_GRACE_S = 2.0
SETTLE_POLL_S = 0.5
SETTLE_REPORT_S = 10.0

Progress = Callable[[str], None]
_PREFIX = "relaydesk-bench-chaos-"


async def run_chaos_bench(options: ChaosOptions, progress: Progress) -> ChaosResult:
    for what, why in (("PostgreSQL", postgres_missing()), ("Redis", redis_missing())):
        if why is not None:
            raise ChaosBenchError(f"a private {what} server cannot be started here: {why}")
    with contextlib.ExitStack() as kept:
        if options.logs_dir is None:
            workdir = Path(kept.enter_context(tempfile.TemporaryDirectory(prefix=_PREFIX)))
        else:
            workdir = Path(options.logs_dir)
            workdir.mkdir(parents=True, exist_ok=True)
        async with chaos_stack(options, workdir, progress) as stack:
            recorded = await _run(options, stack, progress)
    return ChaosResult.of(options, recorded)


async def _run(options: ChaosOptions, stack: ChaosStack, progress: Progress) -> Recorded:
    load = ChaosLoad(
        stack.webhook_url, customer_numbers(options.customers), options.rate, uuid.uuid4().hex[:8]
    )
    samples: list[RssSample] = []
    sampler = asyncio.create_task(sample_every(stack.pids, samples))
    phases: list[Phase] = []
    faults: list[Fault] = []
    try:
        begun = time.perf_counter()
        load.start()
        progress(f"warm-up: {options.rate:g} messages/s from {options.customers} customers")
        await asyncio.sleep(options.warmup_s)
        phases.append(Phase("warmup", begun, time.perf_counter()))
        progress(f"soak: {options.soak_s:g} s without faults")
        await asyncio.sleep(options.soak_s)
        phases.append(Phase("soak", phases[-1].end, time.perf_counter()))
        for name in options.faults:
            progress(f"fault: {name}")
            fault = await inject(name, stack)
            faults.append(fault)
            progress(f"{name}: given back after {fault.restored - fault.started:.1f} s")
            await asyncio.sleep(options.fault_gap_s)
            phases.append(Phase(name, fault.started, time.perf_counter()))
        settle_start = time.perf_counter()
        progress(f"settle: no new messages, at most {options.settle_s:g} s")
        settle_s = await _settle(
            load, stack.database_url, settle_start + options.settle_s, progress
        )
        await asyncio.sleep(CALLBACK_GRACE_S)
        phases.append(Phase("settle", settle_start, time.perf_counter()))
    finally:
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
        await load.finish(time.perf_counter())
    progress("reading the gateway's rows")
    return Recorded(
        offered=load.offered(),
        creates=stack.twilio.creates(),
        snapshot=await read_snapshot(stack.database_url),
        phases=tuple(phases),
        faults=tuple(faults),
        rss=tuple(samples),
        restarts=tuple(stack.restarts),
        settle_s=settle_s,
        callbacks=tuple(status for _, status in stack.twilio.api.callbacks),
    )


async def _settle(
    load: ChaosLoad, database_url: str, deadline: float, progress: Progress
) -> float | None:
    """Until every message was acknowledged and nothing waits to be stored, answered or sent,
    or ``deadline``; the seconds it took, or None when the deadline came first."""
    load.stop_offering()
    started = time.perf_counter()
    next_report = started
    while True:
        webhooks, work = load.unacknowledged(), await unsettled(database_url)
        now = time.perf_counter()
        if webhooks == 0 and work == 0:
            return now - started
        if now >= deadline:
            return None
        if now >= next_report:
            progress(
                f"settle: {webhooks} webhooks not acknowledged yet, {work} messages to store, "
                "answer or send"
            )
            next_report += SETTLE_REPORT_S
        await asyncio.sleep(SETTLE_POLL_S)

"""The faults of a chaos run, one at a time, each as it happens in production:

- ``background-kill``: ``kill -9`` of one background process of ``serve`` (serve starts
  another in its place, the other children serving meanwhile: the fault is given back once
  the replacement's pid is known);
- ``gateway-kill``: ``kill -9`` of one gateway process of ``serve`` (the same);
- ``redis-stop``: Redis killed and started again, empty, on the same port after
  `REDIS_DOWN_S`;
- ``worker-stop``: the compaction worker frozen (SIGSTOP) for `WORKER_STOPPED_S`, then
  continued — a process that hangs without dying;
- ``postgres-stop``: ``pg_ctl stop -m immediate`` (a crash: no checkpoint, clients cut off),
  started again on the same port and data after `POSTGRES_DOWN_S` (crash recovery).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

from devtools.bench.chaos_processes import Kept
from devtools.bench.chaos_records import Fault
from devtools.bench.chaos_stack import ChaosBenchError, ChaosStack

REDIS_DOWN_S = 10.0
WORKER_STOPPED_S = 20.0
POSTGRES_DOWN_S = 15.0
# How long a kill waits for its target to be running, and then for it to run again.
TARGET_WAIT_S = 120.0


async def inject(name: str, stack: ChaosStack) -> Fault:
    """Do fault ``name`` and give the service back; when it was done and given back."""
    started = time.perf_counter()
    if name == "background-kill":
        started = await _kill(stack.serve, "background-1")
    elif name == "gateway-kill":
        started = await _kill(stack.serve, "gateway-1")
    elif name == "redis-stop":
        await asyncio.to_thread(stack.redis.kill)
        await asyncio.sleep(REDIS_DOWN_S)
        await stack.redis.start()
    elif name == "worker-stop":
        started = await _freeze(stack.worker, WORKER_STOPPED_S)
    elif name == "postgres-stop":
        await asyncio.to_thread(stack.postgres.stop)
        await asyncio.sleep(POSTGRES_DOWN_S)
        await asyncio.to_thread(stack.postgres.start)
    else:
        raise ValueError(f"unknown fault {name!r}")
    return Fault(name, started, time.perf_counter())


async def _target(kept: Kept, role: str) -> int:
    deadline = time.monotonic() + TARGET_WAIT_S
    while role not in kept.roles:
        if time.monotonic() > deadline:
            raise ChaosBenchError(f"no {role} of relaydesk {kept.name} to fault:\n{kept.log()}")
        await asyncio.sleep(0.2)
    return kept.roles[role]


async def _kill(kept: Kept, role: str) -> float:
    """Kill the process of ``role``, then wait until another runs in its place (`serve`'s
    supervisor, or the orchestrator if `serve` went down with it); when it was killed."""
    pid = await _target(kept, role)
    os.kill(pid, signal.SIGKILL)
    killed = time.perf_counter()
    deadline = time.monotonic() + TARGET_WAIT_S
    while kept.roles.get(role, pid) == pid and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    return killed


async def _freeze(kept: Kept, seconds: float) -> float:
    pid = await _target(kept, "worker")
    os.kill(pid, signal.SIGSTOP)
    started = time.perf_counter()
    try:
        await asyncio.sleep(seconds)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    return started

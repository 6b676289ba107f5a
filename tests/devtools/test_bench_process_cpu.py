"""The CPU the benchmarks read from ``/proc``: a process tree's, a child it waited for included,
and that of every process of one command name (how `relaydesk bench ingest` finds PostgreSQL and
Redis). Real processes burn real CPU; the bounds leave room for a busy machine."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from devtools.bench.process_cpu import CpuSample, named_cpu_s, sample_cpu, tree_cpu_s

if not os.path.exists("/proc/self/stat"):
    pytest.skip("no /proc here", allow_module_level=True)

# Burns about 0.3 s of CPU in a child it forks and waits for, on each line read; then says so.
_PARENT = """
import os, sys, time
print("ready", flush=True)
for _ in sys.stdin:
    pid = os.fork()
    if pid == 0:
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
    print("burnt", flush=True)
"""

# Names itself (its /proc/PID/comm) after argv[1], then burns about 0.3 s of CPU itself on each
# line read.
_NAMED = """
import sys, time
with open("/proc/self/comm", "w") as comm:
    comm.write(sys.argv[1])
print("ready", flush=True)
for _ in sys.stdin:
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    print("burnt", flush=True)
"""


@contextmanager
def _running(*argv: str) -> Iterator[subprocess.Popen[str]]:
    # Leaving the Popen closes its pipes and waits for it.
    with subprocess.Popen(
        [sys.executable, "-c", *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert _said(process) == "ready"
            yield process
        finally:
            process.kill()


def _said(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    return process.stdout.readline().strip()


def _burn(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.write("go\n")
    process.stdin.flush()
    assert _said(process) == "burnt"


def test_a_busy_tree_counts_the_cpu_of_a_child_that_already_ended() -> None:
    with _running(_PARENT) as parent:
        before = tree_cpu_s([parent.pid])
        _burn(parent)  # the child burnt its CPU and was waited for: it is gone
        after = tree_cpu_s([parent.pid])
        other = tree_cpu_s([parent.pid + 10_000_000])  # no such process
    assert before is not None and after is not None
    assert 0.2 <= after - before < 1.0
    assert other == 0.0


def test_the_processes_of_a_command_name_are_found_and_their_cpu_measured() -> None:
    # Parentheses and a space, as a command name may hold (/proc/PID/stat puts it in brackets).
    name = f"rd) (cpu {os.getpid() % 10_000}"
    with _running(_NAMED, name) as named:
        with open(f"/proc/{named.pid}/comm") as comm:
            assert comm.read().strip() == name
        before = named_cpu_s(name)
        sampled = sample_cpu([named.pid])
        _burn(named)
        after = named_cpu_s(name)
        resampled = sample_cpu([named.pid])
    assert before is not None and after is not None
    assert 0.2 <= after - before < 1.0
    assert named_cpu_s(f"{name}x") == 0.0  # nothing is called that
    # One sample reads the tree and the servers' names in one pass: the tree here is the named
    # process, so its difference is the same burn.
    assert sampled is not None and resampled is not None
    used = resampled.since(sampled)
    assert 0.2 <= used.gateway_s < 1.0


def test_a_difference_of_samples_is_each_figure_s_own() -> None:
    earlier = CpuSample(gateway_s=1.0, postgres_s=20.0, redis_s=3.0)
    later = CpuSample(gateway_s=1.5, postgres_s=20.25, redis_s=3.0)
    assert later.since(earlier) == CpuSample(gateway_s=0.5, postgres_s=0.25, redis_s=0.0)

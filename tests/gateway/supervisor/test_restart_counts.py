"""The supervisor's restart counts, shared with its forked children and read by a gateway's
`/metrics` registry at each scrape."""

from __future__ import annotations

import multiprocessing
import time

from prometheus_client import CollectorRegistry, generate_latest

from gateway.supervisor.restart_counts import RestartCounts
from gateway.supervisor.specs import Role

FORK = multiprocessing.get_context("fork")


def test_the_counts_are_read_when_scraped() -> None:
    counts = RestartCounts(FORK)
    registry = CollectorRegistry()
    counts.register(registry)
    assert _sample(registry, "gateway") == 0.0
    counts.add(Role.GATEWAY)
    counts.add(Role.GATEWAY)
    counts.add(Role.BACKGROUND)
    assert _sample(registry, "gateway") == 2.0
    assert _sample(registry, "background") == 1.0
    exposition = generate_latest(registry).decode()
    assert 'relaydesk_child_restarts_total{role="gateway"} 2.0' in exposition


def _sees_two_gateway_restarts(counts: RestartCounts) -> None:
    """In a child: exit 0 once the parent's two later restarts show, 1 after 10 s."""
    deadline = time.monotonic() + 10
    while counts.get(Role.GATEWAY) < 2:
        if time.monotonic() > deadline:
            raise SystemExit(1)
        time.sleep(0.01)


def test_a_child_sees_what_the_parent_counts_after_it_started() -> None:
    counts = RestartCounts(FORK)
    child = FORK.Process(target=_sees_two_gateway_restarts, args=(counts,))
    child.start()
    try:
        counts.add(Role.GATEWAY)
        counts.add(Role.GATEWAY)
        child.join(15)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
            child.join()


def _sample(registry: CollectorRegistry, role: str) -> float | None:
    value = registry.get_sample_value("relaydesk_child_restarts_total", {"role": role})
    return None if value is None else float(value)

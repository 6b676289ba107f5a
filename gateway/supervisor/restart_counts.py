"""The restarts the supervisor made, by role, in every gateway's `/metrics`.

The supervisor listens on no port, so it keeps the counts in memory shared with its children
(made before the first child, inherited by every child, a replacement included) and each
gateway process reads them when `/metrics` is scraped: `relaydesk_child_restarts_total{role}`
is the same whichever gateway answers. Only the supervisor writes, from one thread; a reader
sees each count whole (one aligned 64-bit word), so no lock is shared across processes.
"""

from __future__ import annotations

from collections.abc import Iterator
from multiprocessing.context import BaseContext
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily

from gateway.supervisor.specs import Role

_ROLES = tuple(Role)


class RestartCounts:
    """Children restarted, by role; create it in the supervisor before starting any child."""

    def __init__(self, context: BaseContext) -> None:
        self._counts: Any = context.RawArray("q", len(_ROLES))

    def add(self, role: Role) -> None:
        self._counts[_ROLES.index(role)] += 1

    def get(self, role: Role) -> int:
        return int(self._counts[_ROLES.index(role)])

    def register(self, registry: CollectorRegistry) -> None:
        """Report the counts in `registry`, read at each scrape."""
        registry.register(_Collector(self))


class _Collector:
    def __init__(self, counts: RestartCounts) -> None:
        self._counts = counts

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "relaydesk_child_restarts",
            "Children of serve --workers started again after dying on their own, by role",
            labels=["role"],
        )
        for role in _ROLES:
            family.add_metric([role.value], self._counts.get(role))
        yield family

"""The latency figures both reply benchmarks report for one side of their comparison: p50 and
p99 of the reply latencies, p99 of the webhooks' acknowledgements."""

from __future__ import annotations

from devtools.bench.harness import percentile


class ReplyLatencies:
    """Percentiles of a result's sorted ``latencies_ms`` and ``ack_ms``.

    A mixin for frozen slotted dataclasses that declare those two fields: the empty
    ``__slots__`` keeps their instances free of a ``__dict__``.
    """

    __slots__ = ()

    latencies_ms: tuple[float, ...]  # sorted
    ack_ms: tuple[float, ...]  # sorted

    @property
    def p50_ms(self) -> float:
        return percentile(self.latencies_ms, 0.50)

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies_ms, 0.99)

    @property
    def ack_p99_ms(self) -> float:
        return percentile(self.ack_ms, 0.99)

    def latency_figures(self) -> dict[str, float]:
        """The three percentiles as a JSON line names them, in ms to two decimals."""
        return {
            "p50_ms": round(self.p50_ms, 2),
            "p99_ms": round(self.p99_ms, 2),
            "ack_p99_ms": round(self.ack_p99_ms, 2),
        }

"""The figures of ``relaydesk bench reply --tool-latency``: what the read action did during the
side that offers it, and the goal that side is held to.

The goal: with the model calling one read action per turn, replies/s stays at least
`RATIO_TARGET` of the same load without it, and p99 stays within two model calls, the action's
latency and `P99_SLACK_S` (a turn's two model calls and its call run one after the other).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

RATIO_TARGET: Final = 0.9
P99_SLACK_S: Final = 1.0


def p99_bound_ms(model_latency_s: float, tool_latency_s: float) -> float:
    """The p99 the side with the action must stay within."""
    return (2 * model_latency_s + tool_latency_s + P99_SLACK_S) * 1000.0


@dataclass(frozen=True, slots=True)
class ToolRun:
    """The read action's calls during the load (the warm-up's left out): those the business API
    answered, the distinct order ids among them (one per message, each the message's reference)
    and those called more than once; calls refused for their identity assertion; the model's
    answers that were a call, and the results the gateway passed back as failures; the API's
    peak of calls at once and the connections the calls came over."""

    latency_s: float
    calls: int
    orders: int
    repeated: int
    refused: int
    model_calls: int
    failed_results: int
    peak_in_flight: int
    connections: int

    def per_reply(self, replies: int) -> float:
        return self.calls / replies if replies else 0.0

    def line(self, replies: int) -> str:
        return (
            f"read tool ({self.latency_s:g} s): {self.calls} calls for {replies} replies "
            f"({self.per_reply(replies):.2f} per reply; {self.orders} messages looked up, "
            f"{self.repeated} more than once), {self.model_calls} model answers were a call, "
            f"{self.failed_results} results failed, {self.refused} assertions refused, "
            f"peak {self.peak_in_flight} calls in flight, over {self.connections} connections"
        )

    def figures(self, replies: int) -> dict[str, float | int]:
        return {
            "latency_s": self.latency_s,
            "calls": self.calls,
            "calls_per_reply": round(self.per_reply(replies), 3),
            "orders": self.orders,
            "repeated": self.repeated,
            "refused": self.refused,
            "model_calls": self.model_calls,
            "failed_results": self.failed_results,
            "peak_in_flight": self.peak_in_flight,
            "connections": self.connections,
        }


@dataclass(frozen=True, slots=True)
class ToolGoal:
    """The goal's two checks on one run: the replies/s ratio with the action over without it,
    and the p99 with it against `p99_bound_ms`."""

    ratio: float
    p99_ms: float
    bound_ms: float

    @property
    def ratio_met(self) -> bool:
        return self.ratio >= RATIO_TARGET

    @property
    def p99_met(self) -> bool:
        return self.p99_ms <= self.bound_ms

    def lines(self, model_latency_s: float, tool_latency_s: float) -> list[str]:
        return [
            f"replies/s with the tool / without: {self.ratio:.3f} "
            f"(target >= {RATIO_TARGET:g}: {_verdict(self.ratio_met)})",
            f"p99 with the tool: {self.p99_ms:.0f} ms (bound 2 x {model_latency_s:g} s + "
            f"{tool_latency_s:g} s + {P99_SLACK_S:g} s = {self.bound_ms:.0f} ms: "
            f"{_verdict(self.p99_met)})",
        ]

    def figures(self) -> dict[str, float | bool]:
        return {
            "ratio": round(self.ratio, 3),
            "ratio_target": RATIO_TARGET,
            "ratio_met": self.ratio_met,
            "p99_ms": round(self.p99_ms, 2),
            "p99_bound_ms": round(self.bound_ms, 2),
            "p99_met": self.p99_met,
        }


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"

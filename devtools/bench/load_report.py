"""The figures of ``relaydesk bench reply --model-latency``: one row per model (the instant
offline one, the slow one and, with ``--tool-latency``, the slow one calling a read action per
turn), their ratios of sustained replies per second, the action's goal and calls, and the web
chat line; as a table and as one JSON line."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

from devtools.bench.embedded_history import NO_HISTORY_LINE, EmbeddedHistory
from devtools.bench.latencies import ReplyLatencies
from devtools.bench.load_tool_report import ToolGoal, ToolRun, p99_bound_ms
from devtools.bench.load_webchat import WebchatRounds
from devtools.bench.reply_stack import GATEWAY_PROCESSES


@dataclass(frozen=True, slots=True)
class SideResult(ReplyLatencies):
    """One model's run under the offered load. Latencies count from each message's due time;
    ``span_s`` runs from the first due time to the last reply, ``reply_span_s`` from the first
    reply to the last: the sustained pace is replies over the latter (a model's latency delays
    the first reply and the last alike, so it leaves the pace alone unless answering falls
    behind the offered load)."""

    model: str  # "offline" or the slow model's description
    offered: int
    refused: int  # webhooks not acknowledged with a 200 (their replies are missing too)
    latencies_ms: tuple[float, ...]  # sorted
    ack_ms: tuple[float, ...]  # sorted, acknowledged webhooks only
    fallbacks: int  # replies that were the model-failure message
    span_s: float
    reply_span_s: float
    peak_in_flight: int  # model requests at once, as the model server counted them
    model_requests: int
    # CPU seconds of the gateway's processes from the first message to the last reply (None
    # where it cannot be read): what a reply costs, whatever else the machine runs.
    gateway_cpu_s: float | None = None

    @property
    def replies(self) -> int:
        return len(self.latencies_ms)

    @property
    def missing(self) -> int:
        return self.offered - self.replies

    @property
    def cpu_ms_per_reply(self) -> float | None:
        if self.gateway_cpu_s is None or not self.replies:
            return None
        return self.gateway_cpu_s * 1000.0 / self.replies

    @property
    def replies_per_s(self) -> float:
        """Sustained: the intervals between the first and the last reply, per second."""
        return (self.replies - 1) / self.reply_span_s if self.reply_span_s > 0 else 0.0

    def figures(self) -> dict[str, float | int | None]:
        return {
            "offered": self.offered,
            "replies": self.replies,
            "missing": self.missing,
            "refused": self.refused,
            "fallbacks": self.fallbacks,
            **self.latency_figures(),
            "replies_per_s": round(self.replies_per_s, 3),
            "peak_in_flight": self.peak_in_flight,
            "model_requests": self.model_requests,
            "gateway_cpu_s": None if self.gateway_cpu_s is None else round(self.gateway_cpu_s, 2),
            "cpu_ms_per_reply": _rounded(self.cpu_ms_per_reply),
        }


@dataclass(frozen=True, slots=True)
class LoadResult:
    offline: SideResult
    slow: SideResult
    webchat: WebchatRounds | None
    customers: int
    rate: float
    seconds: float
    background: int
    model_latency_s: float
    stream_rate: float | None
    tools: SideResult | None = None  # the slow model calling the read action once per turn
    tool_run: ToolRun | None = None
    # The history seeded and embedded before the load (``--embedded-history``); None: none.
    history: EmbeddedHistory | None = None

    def __post_init__(self) -> None:
        if (self.tools is None) != (self.tool_run is None):
            raise ValueError("the side with the action and its calls go together")

    @property
    def sides(self) -> tuple[SideResult, ...]:
        both = (self.offline, self.slow)
        return both if self.tools is None else (*both, self.tools)

    @property
    def ratio(self) -> float:
        """Sustained replies/s with the slow model over those with the instant one."""
        return _ratio(self.slow, self.offline)

    @property
    def goal(self) -> ToolGoal | None:
        """The action's goal, checked on the side with it against the slow side without."""
        if self.tools is None or self.tool_run is None:
            return None
        return ToolGoal(
            ratio=_ratio(self.tools, self.slow),
            p99_ms=self.tools.p99_ms,
            bound_ms=p99_bound_ms(self.model_latency_s, self.tool_run.latency_s),
        )

    def table(self) -> str:
        lines = [
            f"answering under load: {self.rate:g} messages/s offered for {self.seconds:g} s by "
            f"{self.customers} customers (signed WhatsApp webhooks, open loop; latency from each "
            "message's due time to its reply reaching the Twilio API)",
            f"relaydesk serve --workers {GATEWAY_PROCESSES} --background {self.background} + "
            f"PostgreSQL + Redis, {os.cpu_count()} CPUs; the {len(self.sides)} sides one after "
            "the other on one database",
            f"{'model':<30} {'offered':>7} {'replies':>7} {'missing':>7} {'p50 ms':>9} "
            f"{'p99 ms':>9} {'replies/s':>9} {'ack p99 ms':>10} {'peak in flight':>14} "
            f"{'CPU ms/reply':>12}",
        ]
        for side in self.sides:
            lines.append(
                f"{side.model:<30} {side.offered:>7} {side.replies:>7} {side.missing:>7} "
                f"{side.p50_ms:>9.1f} {side.p99_ms:>9.1f} {side.replies_per_s:>9.2f} "
                f"{side.ack_p99_ms:>10.1f} {side.peak_in_flight:>14} "
                f"{_cpu(side.cpu_ms_per_reply):>12}"
            )
        lines.append(f"replies/s slow / offline: {self.ratio:.3f}")
        goal = self.goal
        if goal is not None and self.tools is not None and self.tool_run is not None:
            lines.extend(goal.lines(self.model_latency_s, self.tool_run.latency_s))
            lines.append(self.tool_run.line(self.tools.replies))
        problems = [
            f"{side.model}: {what}"
            for side in self.sides
            for what in (
                f"{side.refused} webhooks refused" if side.refused else "",
                f"{side.fallbacks} fallback replies (the model call failed)"
                if side.fallbacks
                else "",
            )
            if what
        ]
        lines.extend(problems)
        queueing = self.queueing_note()
        if queueing:
            lines.append(queueing)
        lines.append(NO_HISTORY_LINE if self.history is None else self.history.line())
        if self.webchat is not None:
            lines.append(self.webchat.line())
        return "\n".join(lines)

    def queueing_note(self) -> str:
        """A warning when one customer's messages come closer together than the slowest side's
        turn takes: its conversation's turns then wait for each other (one at a time)."""
        gap_s = self.customers / self.rate
        turn_s = self.model_latency_s
        if self.tool_run is not None:
            turn_s = 2 * self.model_latency_s + self.tool_run.latency_s
        if gap_s >= turn_s:
            return ""
        return (
            f"note: each customer's messages come {gap_s:.2f} s apart, less than a turn takes "
            f"({turn_s:g} s of model{' and tool' if self.tool_run else ''}): a conversation's "
            f"turns are answered one at a time, so they queue; give at least "
            f"{math.ceil(self.rate * turn_s)} customers to measure the gateway instead"
        )

    def json_line(self) -> str:
        goal, tools, tool_run = self.goal, self.tools, self.tool_run
        return json.dumps(
            {
                "model_latency_s": self.model_latency_s,
                "tool_latency_s": None if tool_run is None else tool_run.latency_s,
                "stream_rate": self.stream_rate,
                "customers": self.customers,
                "rate": self.rate,
                "seconds": self.seconds,
                "background": self.background,
                "offline": self.offline.figures(),
                "slow": self.slow.figures(),
                "replies_per_s_ratio": round(self.ratio, 3),
                "tools": None if tools is None else tools.figures(),
                "tool_calls": (
                    None if tools is None or tool_run is None else tool_run.figures(tools.replies)
                ),
                "tool_goal": None if goal is None else goal.figures(),
                "webchat": None if self.webchat is None else self.webchat.figures(),
                "embedded_history": None if self.history is None else self.history.figures(),
            }
        )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _cpu(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.1f}"


def _ratio(side: SideResult, base: SideResult) -> float:
    return side.replies_per_s / base.replies_per_s if base.replies_per_s > 0 else 0.0

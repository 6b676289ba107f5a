"""Traces: compaction runs on the profile page (facts and summary before and after each), a
turn's action calls on its message's page, and the customer's latest calls on the profile."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.console.html import Html, el
from gateway.console.views_layout import table
from gateway.operators.action_history import AuditedCall, TurnCall, TurnTrace
from gateway.operators.profile import Profile
from gateway.storage.records import CompactionTraceRecord


def _fact_map(raw: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in raw.get("facts", []) or []:
        if isinstance(item, dict):
            out[f"{item.get('key')}#{item.get('id')}"] = f"{item.get('key')} = {item.get('value')}"
    return out


def trace_diff(trace: CompactionTraceRecord) -> list[tuple[str, str]]:
    """(`added` | `removed`, line) for the facts a compaction run changed."""
    before, after = _fact_map(trace.facts_before), _fact_map(trace.facts_after)
    diff = [("removed", before[k]) for k in before if k not in after]
    diff += [("added", after[k]) for k in after if k not in before]
    return diff


def traces_section(profile: Profile) -> Html:
    items = []
    for trace in reversed(profile.traces):
        diff = trace_diff(trace)
        items.append(
            el(
                "details",
                {"class_": "trace"},
                el(
                    "summary",
                    None,
                    f"{trace.created_at:%Y-%m-%d %H:%M} · {trace.compactor}"
                    f"{' · ' + trace.model if trace.model else ''} · {len(diff)} fact changes"
                    f"{' · error: ' + trace.error if trace.error else ''}",
                ),
                el(
                    "ul",
                    {"class_": "diff"},
                    [
                        el("li", {"class_": kind}, "+ " if kind == "added" else "− ", line)
                        for kind, line in diff
                    ],
                )
                if diff
                else el("p", {"class_": "muted"}, "No fact changed."),
                el(
                    "div",
                    {"class_": "summary-diff"},
                    el(
                        "div",
                        {"class_": "removed"},
                        el("h4", None, "Summary before"),
                        el("p", None, trace.summary_before or "—"),
                    ),
                    el(
                        "div",
                        {"class_": "added"},
                        el("h4", None, "Summary after"),
                        el("p", None, trace.summary_after or "—"),
                    ),
                ),
            )
        )
    return el(
        "section",
        {"id": "traces"},
        el("h2", None, "Compaction traces"),
        items or el("p", None, "None."),
    )


def _call_row(call: TurnCall) -> Html:
    return el(
        "tr",
        {"data_tool": call.tool, "data_status": call.status},
        el("td", None, el("code", None, call.tool)),
        el("td", None, call.status),
        el("td", None, "—" if call.http_status is None else call.http_status),
        el("td", None, f"{call.latency_ms:.1f} ms"),
        el("td", None, ", ".join(call.dropped) or "—"),
    )


def turn_section(trace: TurnTrace | None) -> Html | None:
    """The turn a customer message started: how it was answered and the action calls made on
    the way (from its report); nothing for a message that started no turn."""
    if trace is None:
        return None
    model = " / ".join(part for part in (trace.provider, trace.model) if part) or "no model"
    calls = (
        table(
            ("Action", "Status", "HTTP", "Latency", "Dropped arguments"),
            [_call_row(call) for call in trace.calls],
            class_=None,
        )
        if trace.calls
        else el("p", {"class_": "muted"}, "No action calls.")
    )
    return el(
        "section",
        {"id": "turn", "class_": "trace-card", "data_turn_id": trace.id},
        el("h2", None, f"Turn #{trace.id}"),
        el(
            "p",
            {"class_": "muted"},
            f"{trace.status} · {model} · {trace.attempts} "
            f"{'attempt' if trace.attempts == 1 else 'attempts'} · "
            f"{trace.prompt_tokens} prompt and {trace.completion_tokens} completion tokens",
        ),
        el("p", {"class_": "error"}, trace.error) if trace.error else None,
        el("h3", None, "Action calls"),
        calls,
    )


def _outcome(call: AuditedCall) -> str:
    # A decision's row carries the call's outcome too (a rejection's is the decision itself).
    if call.status and call.status != call.event:
        return f"{call.event} · {call.status}"
    return call.event


def action_calls_section(calls: Sequence[AuditedCall]) -> Html:
    """The customer's latest action calls and operators' decisions on them, newest first."""
    rows = [
        el(
            "tr",
            {"data_tool": call.tool, "data_event": call.event},
            el("td", None, f"{call.at:%Y-%m-%d %H:%M:%S}"),
            el("td", None, el("code", None, call.tool)),
            el("td", None, _outcome(call)),
            el("td", None, call.actor),
            el(
                "td",
                None,
                el("span", {"class_": f"level level-{call.link_level}"}, call.link_level),
            ),
            el("td", None, call.channel),
            el("td", None, el("code", {"class_": "arguments"}, call.arguments or "—")),
        )
        for call in calls
    ]
    return el(
        "section",
        {"id": "action-calls", "class_": "trace-card"},
        el("h2", None, "Action calls"),
        table(
            ("When", "Action", "Outcome", "By", "Link level", "Channel", "Arguments"),
            rows,
            class_="audit",
        )
        if rows
        else el("p", None, "None."),
    )

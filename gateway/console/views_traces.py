"""Compaction traces on the profile page: facts and summary before and after each run."""

from __future__ import annotations

from typing import Any

from gateway.console.html import Html, el
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

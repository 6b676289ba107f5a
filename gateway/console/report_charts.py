"""The outcome report's charts, drawn on the server as inline SVG (no script, no fetch).

Each chart scales to its container's width (a `viewBox`, no fixed size) and carries a
`<title>` per mark, so a pointer or a screen reader gets the figure behind a bar.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.console.html import Child, Html, el
from gateway.reports.figures import Figures, HandoffReason, Report

WIDTH = 640
HEIGHT = 240
LEFT, RIGHT, TOP, BOTTOM = 40, 10, 14, 40
PALETTE = ("#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626", "#0891b2", "#4b5563")
REASON_LABELS = {
    HandoffReason.PHRASE: "Customer asked",
    HandoffReason.FAILURES: "Model failures",
    HandoffReason.MODEL_MARKER: "Model marker",
    HandoffReason.TAKEOVER: "Operator take-over",
    HandoffReason.OTHER: "Other",
}


def _svg(label: str, height: int, *marks: Child) -> Html:
    return el(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewBox": f"0 0 {WIDTH} {height}",
            "width": "100%",
            "role": "img",
            "aria-label": label,
            "class_": "report-chart",
        },
        el("title", None, label),
        *marks,
    )


def _text(x: float, y: float, text: str, anchor: str = "middle", size: int = 11) -> Html:
    return el(
        "text",
        {
            "x": round(x, 1),
            "y": round(y, 1),
            "text_anchor": anchor,
            "font_size": size,
            "fill": "#374151",
        },
        text,
    )


def _rect(x: float, y: float, w: float, h: float, fill: str, title: str) -> Html:
    attrs = {"x": round(x, 1), "y": round(y, 1), "width": round(w, 1), "height": round(h, 1)}
    return el("rect", {**attrs, "fill": fill}, el("title", None, title))


def _axis(top: float) -> list[Html]:
    """The y axis's top value and zero, and the baseline."""
    base = HEIGHT - BOTTOM
    return [
        el("line", {"x1": LEFT, "y1": base, "x2": WIDTH - RIGHT, "y2": base, "stroke": "#9ca3af"}),
        _text(LEFT - 4, base + 4, "0", "end"),
        _text(LEFT - 4, TOP + 4, f"{top:g}", "end"),
    ]


def _day_labels(days: Sequence[str], slot: float) -> list[Html]:
    every = max(1, len(days) // 7)  # at most about seven labels, so they never overlap
    return [
        _text(LEFT + slot * (i + 0.5), HEIGHT - BOTTOM + 16, day)
        for i, day in enumerate(days)
        if i % every == 0
    ]


def _legend(names: Sequence[str], colors: Sequence[str]) -> list[Html]:
    items: list[Html] = []
    for i, (name, color) in enumerate(zip(names, colors, strict=True)):
        x = LEFT + i * 120
        items.append(_rect(x, HEIGHT - 14, 10, 10, color, name))
        items.append(_text(x + 14, HEIGHT - 5, name, "start"))
    return items


def conversations_chart(report: Report) -> Html:
    """Conversations per day, stacked by channel."""
    per_day = {(f.day, f.channel): f.conversations for f in report.by_day_channel}
    top = max([f.conversations for f in report.by_day] + [1])
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(report.days))
    scale = (HEIGHT - TOP - BOTTOM) / top
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(report.channels))]
    bars: list[Html] = []
    for i, day in enumerate(report.days):
        y = float(HEIGHT - BOTTOM)
        for channel, color in zip(report.channels, colors, strict=True):
            count = per_day.get((day, channel), 0)
            if count:
                h = count * scale
                y -= h
                x = LEFT + slot * i + slot * 0.15
                bars.append(_rect(x, y, slot * 0.7, h, color, f"{day} {channel}: {count}"))
    labels = [day.strftime("%m-%d") for day in report.days]
    return _svg(
        "Conversations per day, by channel",
        HEIGHT,
        _axis(top),
        bars,
        _day_labels(labels, slot),
        _legend(report.channels, colors),
    )


def reasons_chart(total: Figures) -> Html:
    """Conversations handed to a person, by reason (horizontal bars)."""
    row, label_width = 30, 150
    height = TOP + row * len(HandoffReason) + 10
    top = max([count for _, count in total.handed_over] + [1])
    scale = (WIDTH - label_width - RIGHT - 40) / top
    marks: list[Html] = []
    for i, (reason, count) in enumerate(total.handed_over):
        y = TOP + row * i
        name = REASON_LABELS[reason]
        marks.append(_text(label_width - 6, y + 15, name, "end"))
        width = max(count * scale, 1)
        marks.append(_rect(label_width, y + 4, width, 16, PALETTE[4], f"{name}: {count}"))
        marks.append(_text(label_width + width + 6, y + 15, str(count), "start"))
    return _svg("Conversations handed to a person, by reason", height, marks)


def first_reply_chart(report: Report) -> Html:
    """The bot's time to first reply per day: p50 and p90 side by side, in seconds."""
    values = [(f.first_reply_bot.p50 or 0.0, f.first_reply_bot.p90 or 0.0) for f in report.by_day]
    top = max([p90 for _, p90 in values] + [p50 for p50, _ in values] + [1.0])
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(report.days))
    scale = (HEIGHT - TOP - BOTTOM) / top
    base = HEIGHT - BOTTOM
    bars: list[Html] = []
    for i, (day, (p50, p90)) in enumerate(zip(report.days, values, strict=True)):
        x = LEFT + slot * i + slot * 0.15
        half = slot * 0.35
        for offset, value, color, name in (
            (0.0, p50, PALETTE[0], "p50"),
            (half, p90, PALETTE[2], "p90"),
        ):
            if value:
                h = value * scale
                bars.append(
                    _rect(x + offset, base - h, half, h, color, f"{day} {name}: {value:g} s")
                )
    labels = [day.strftime("%m-%d") for day in report.days]
    return _svg(
        "Bot's time to first reply per day (seconds)",
        HEIGHT,
        _axis(round(top, 1)),
        bars,
        _day_labels(labels, slot),
        _legend(["p50", "p90"], [PALETTE[0], PALETTE[2]]),
    )

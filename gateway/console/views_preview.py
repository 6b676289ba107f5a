"""The context preview page: the window, its budget as a bar, and what was dropped."""

from __future__ import annotations

from collections.abc import Sequence

from context import Window
from gateway.console.html import Html, el
from gateway.console.views_layout import page, table
from gateway.operators.logins import OperatorLogin
from gateway.storage.records import (
    ChannelIdentityRecord,
)


def budget_bar(window: Window) -> Html:
    """The input budget as a bar: one segment per slice's use, the rest free."""
    report = window.report
    total = max(report.input_budget, 1)
    x = 0.0
    segments: list[Html] = []
    for item in report.slices:
        width = 100.0 * item.used / total
        segments.append(
            el(
                "rect",
                {
                    "x": f"{x:.3f}%",
                    "y": 0,
                    "width": f"{width:.3f}%",
                    "height": 28,
                    "class_": f"seg seg-{item.name}",
                },
                el("title", None, f"{item.name}: {item.used} of {item.budget}"),
            )
        )
        x += width
    return el(
        "svg",
        {
            "class_": "budget",
            "width": "100%",
            "height": 28,
            "role": "img",
            "aria_label": f"{report.estimated_tokens} of {report.input_budget} input tokens used",
        },
        el("rect", {"x": 0, "y": 0, "width": "100%", "height": 28, "class_": "seg-free"}),
        segments,
    )


def preview_page(
    login: OperatorLogin,
    customer_id: str,
    identity: ChannelIdentityRecord,
    scopes: Sequence[str],
    message: str,
    window: Window,
) -> Html:
    report = window.report
    slices = table(
        ("Slice", "Used / budget", "", "Received", "Granted", "Ceded"),
        [
            el(
                "tr",
                {"data_slice": s.name},
                el("td", None, el("span", {"class_": f"swatch seg-{s.name}"}), s.name),
                el("td", None, f"{s.used} / {s.budget}"),
                el(
                    "td",
                    None,
                    el("meter", {"min": 0, "max": max(s.budget, 1), "value": s.used}),
                ),
                el("td", None, s.received),
                el("td", None, s.granted),
                el("td", None, s.ceded),
            )
            for s in report.slices
        ],
        class_="slices",
    )
    dropped = (
        table(
            ("Kind", "Item", "Why"),
            [
                el(
                    "tr",
                    None,
                    el("td", None, d.kind),
                    el("td", None, d.id),
                    el("td", None, d.reason),
                )
                for d in report.dropped
            ],
            class_="dropped",
        )
        if report.dropped
        else el("p", None, "Nothing was dropped.")
    )
    return page(
        "Context preview",
        login,
        el("h1", None, "Context preview"),
        el(
            "p",
            None,
            el("a", {"href": f"/console/customers/{customer_id}"}, "← back to the profile"),
        ),
        el(
            "p",
            None,
            f"As {identity.external_id} ({identity.link_level}); visible scopes: ",
            ", ".join(scopes) or "none",
            f"; message: {message!r}",
        ),
        el("h2", None, "Budget"),
        el(
            "p",
            {"class_": "budget-figures"},
            f"{report.estimated_tokens} of {report.input_budget} input tokens "
            f"(window {report.window}, output reserve {report.output_reserve}); "
            f"full history {report.full_history_tokens} tokens",
        ),
        budget_bar(window),
        slices,
        el("h2", None, "Dropped"),
        dropped,
        el("h2", None, "Window"),
        el(
            "ol",
            {"class_": "window"},
            [
                el(
                    "li",
                    {"class_": f"role-{m.role}"},
                    el("span", {"class_": "role"}, m.role),
                    el("pre", None, m.content),
                )
                for m in window.messages
            ],
        ),
    )

"""`/console/reports`: outcome figures of a date range, per day and channel, with charts, and
the same figures as CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from urllib.parse import urlencode

from gateway.console.html import Html, el
from gateway.console.report_charts import (
    REASON_LABELS,
    conversations_chart,
    first_reply_chart,
    reasons_chart,
)
from gateway.console.views_layout import page, table
from gateway.operators.logins import OperatorLogin
from gateway.reports.figures import Figures, HandoffReason, Report, Spread
from gateway.reports.query import ReportQuery

CSV_HEADER = (
    "day",
    "channel",
    "conversations",
    "customer_messages",
    "bot_messages",
    "operator_messages",
    "resolved_by_bot",
    "handed_over",
    *(f"handed_over_{reason.value}" for reason in HandoffReason),
    "first_reply_bot_p50_s",
    "first_reply_bot_p90_s",
    "first_reply_human_p50_s",
    "first_reply_human_p90_s",
    "waiting_p50_s",
    "waiting_p90_s",
    "csat_answers",
    "csat_average",
)


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _average(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _cells(figures: Figures) -> list[str]:
    spreads: Sequence[Spread] = (
        figures.first_reply_bot,
        figures.first_reply_human,
        figures.waiting_for_person,
    )
    return [
        str(figures.conversations),
        str(figures.customer_messages),
        str(figures.bot_messages),
        str(figures.operator_messages),
        str(figures.resolved_by_bot),
        str(figures.handed_over_total),
        *(str(count) for _, count in figures.handed_over),
        *(_seconds(value) for s in spreads for value in (s.p50, s.p90)),
        str(figures.csat_answers),
        _average(figures.csat_average),
    ]


def report_rows(report: Report) -> list[list[str]]:
    """Each (day, channel) with conversations, each day for all channels, then the range."""
    rows = [[str(f.day), f.channel, *_cells(f)] for f in report.by_day_channel]
    rows += [[str(f.day), f.channel, *_cells(f)] for f in report.by_day]
    rows.append(["total", report.total.channel, *_cells(report.total)])
    return rows


def report_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    writer.writerows(report_rows(report))
    return out.getvalue()


def _filters(query: ReportQuery, tenants: Sequence[str]) -> Html:
    options = [el("option", {"value": ""}, "All tenants")] + [
        el("option", {"value": t, "selected": t == query.tenant}, t) for t in tenants
    ]
    return el(
        "form",
        {"method": "get", "action": "/console/reports", "class_": "report-filters"},
        el(
            "label",
            None,
            "From",
            el("input", {"type": "date", "name": "since", "value": str(query.since)}),
        ),
        el(
            "label",
            None,
            "To",
            el("input", {"type": "date", "name": "until", "value": str(query.until)}),
        ),
        el("label", None, "Tenant", el("select", {"name": "tenant"}, options)),
        el("button", {"type": "submit"}, "Show"),
    )


def _csv_link(query: ReportQuery) -> str:
    params = {"since": str(query.since), "until": str(query.until)}
    if query.tenant is not None:
        params["tenant"] = query.tenant
    return "/console/reports.csv?" + urlencode(params)


def _figure(name: str, value: str, note: str) -> Html:
    return el(
        "div",
        {"class_": "report-figure"},
        el("strong", None, value),
        el("span", None, name),
        el("small", None, note),
    )


def _summary(total: Figures) -> Html:
    share = (
        f"{100 * total.handed_over_total / total.conversations:.0f}% of conversations"
        if total.conversations
        else "no conversations"
    )
    return el(
        "div",
        {"class_": "report-summary"},
        _figure("Conversations", str(total.conversations), "started in the range"),
        _figure("Resolved by the bot", str(total.resolved_by_bot), "no person took part"),
        _figure("Handed to a person", str(total.handed_over_total), share),
        _figure(
            "Waiting for a person",
            f"{_seconds(total.waiting_for_person.p50) or '–'} s",
            f"p50, p90 {_seconds(total.waiting_for_person.p90) or '–'} s",
        ),
        _figure(
            "Customer satisfaction",
            _average(total.csat_average) or "–",
            f"average of {total.csat_answers} answers (1-5)",
        ),
    )


def reports_page(
    login: OperatorLogin, query: ReportQuery, tenants: Sequence[str], report: Report
) -> Html:
    headers = [h.replace("_", " ") for h in CSV_HEADER]
    for reason in HandoffReason:
        headers[CSV_HEADER.index(f"handed_over_{reason.value}")] = (
            f"handed: {REASON_LABELS[reason]}"
        )
    rows = [el("tr", None, [el("td", None, cell) for cell in row]) for row in report_rows(report)]
    return page(
        "Reports",
        login,
        el("h1", None, "Outcome reports"),
        _filters(query, tenants),
        el("p", None, el("a", {"href": _csv_link(query), "download": True}, "Download CSV")),
        _summary(report.total),
        el(
            "div",
            {"class_": "report-charts"},
            el(
                "figure",
                None,
                el("figcaption", None, "Conversations per day, by channel"),
                conversations_chart(report),
            ),
            el(
                "figure",
                None,
                el("figcaption", None, "Handed to a person, by reason"),
                reasons_chart(report.total),
            ),
            el(
                "figure",
                None,
                el("figcaption", None, "Bot's first reply per day, p50 and p90 (s)"),
                first_reply_chart(report),
            ),
        ),
        el("h2", None, "Per day and channel"),
        el(
            "p",
            {"class_": "hint"},
            "A conversation is counted on the day (UTC) it started. Times are in seconds: the "
            "bot's first reply from the customer's first message, a person's first reply from "
            "the handoff, the wait from the handoff until an operator took the conversation.",
        ),
        el("div", {"class_": "report-table"}, table(headers, rows, class_="report")),
    )

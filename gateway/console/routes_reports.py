"""`/console/reports` and `/console/reports.csv`: the outcome report for admins and agents."""

from __future__ import annotations

from datetime import date, timedelta

from aiohttp import web

from gateway.console.pages import console, html_response
from gateway.console.views_reports import report_csv, reports_page
from gateway.http.errors import BadRequest
from gateway.keys import SESSIONS
from gateway.operators import logins
from gateway.reports.query import ReportQuery, read_report, tenants
from gateway.runtime.clock import utcnow

DEFAULT_DAYS = 14
MAX_DAYS = 366


def _day(request: web.Request, name: str, default: date) -> date:
    given = request.query.get(name, "").strip()
    if not given:
        return default
    try:
        return date.fromisoformat(given)
    except ValueError as exc:
        raise BadRequest(f"{name} must be a date (YYYY-MM-DD)") from exc


def report_query(request: web.Request) -> ReportQuery:
    """The range asked for (by default the last 14 days, today included) and the tenant."""
    today = utcnow().date()
    until = _day(request, "until", today)
    since = _day(request, "since", until - timedelta(days=DEFAULT_DAYS - 1))
    if since > until:
        raise BadRequest("since must not be after until")
    if (until - since).days >= MAX_DAYS:
        raise BadRequest(f"a report covers at most {MAX_DAYS} days")
    tenant = request.query.get("tenant", "").strip() or None
    return ReportQuery(since, until, tenant)


@console
async def reports(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    query = report_query(request)
    async with request.app[SESSIONS]() as session:
        report = await read_report(session, query)
        known = await tenants(session)
    return html_response(reports_page(login, query, known, report))


@console
async def reports_csv(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    query = report_query(request)
    async with request.app[SESSIONS]() as session:
        report = await read_report(session, query)
    name = f"relaydesk-report-{query.since}-{query.until}.csv"
    return web.Response(
        text=report_csv(report),
        content_type="text/csv",
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get("/console/reports", reports)
    app.router.add_get("/console/reports.csv", reports_csv)

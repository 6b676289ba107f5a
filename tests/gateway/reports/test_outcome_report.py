"""The outcome report over real storage (SQLite and PostgreSQL) matches figures worked out by
hand for a seeded set of conversations."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.console.views_reports import report_rows
from gateway.reports.figures import HandoffReason, percentile
from gateway.reports.query import ReportQuery, read_report
from gateway.tenant_ref import DEFAULT_TENANT
from tests.support.outcome_seed import (
    DAY_1,
    DAY_2,
    EXPECTED_ALL_TENANTS,
    EXPECTED_DEFAULT_TENANT,
    seed_outcomes,
)


async def test_report_matches_the_hand_computed_figures(session: AsyncSession) -> None:
    await seed_outcomes(session)
    report = await read_report(session, ReportQuery(DAY_1, DAY_2))
    assert report_rows(report) == EXPECTED_ALL_TENANTS
    assert report.days == (DAY_1, DAY_2)
    assert report.channels == ("telegram", "webchat", "whatsapp")
    assert report.total.handed(HandoffReason.TAKEOVER) == 1
    assert report.total.first_reply_bot.count == 5


async def test_the_tenant_filter_leaves_other_tenants_out(session: AsyncSession) -> None:
    await seed_outcomes(session)
    query = ReportQuery(DAY_1, DAY_2, DEFAULT_TENANT.encode())
    assert report_rows(await read_report(session, query)) == EXPECTED_DEFAULT_TENANT


async def test_a_range_without_conversations_lists_its_days_empty(session: AsyncSession) -> None:
    await seed_outcomes(session)
    report = await read_report(session, ReportQuery(DAY_2, DAY_2, "nobody.example"))
    assert report.by_day_channel == ()
    assert [f.conversations for f in report.by_day] == [0]
    assert report.total.first_reply_bot.p50 is None


def test_percentiles_are_nearest_rank() -> None:
    assert percentile([8, 2, 6, 4, 3], 50) == 4
    assert percentile([8, 2, 6, 4, 3], 90) == 8
    assert percentile([40, 70], 50) == 40
    assert percentile([], 50) is None

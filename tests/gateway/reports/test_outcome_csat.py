"""Satisfaction answers in the outcome report: counted per day and channel with their average
(an episode's latest answer counts; a survey not answered is left out), in the CSV's last two
columns."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.console.views_reports import CSV_HEADER, report_rows
from gateway.reports.query import ReportQuery, read_report
from gateway.storage.models import Conversation, Episode
from gateway.storage.repositories import csat
from tests.support.outcome_seed import DAY_1, DAY_2, T1, T2, seed_outcomes


async def _episodes(session: AsyncSession, channel: str, started: object) -> list[Episode]:
    found = await session.scalars(
        select(Episode)
        .where(Episode.channel == channel, Episode.started_at == started)
        .order_by(Episode.id)
    )
    return list(found)


async def _survey(session: AsyncSession, episode: Episode, score: int | None, minutes: int) -> None:
    conversation = await session.scalar(
        select(Conversation).where(
            Conversation.customer_id == episode.customer_id,
            Conversation.channel == episode.channel,
        )
    )
    assert conversation is not None
    at = episode.started_at + timedelta(minutes=minutes)
    asked = await csat.record_asked(
        session,
        conversation_id=conversation.id,
        customer_id=episode.customer_id,
        channel=episode.channel,
        tenant=conversation.tenant,
        episode_id=episode.id,
        trigger="handed_back",
        person_took_part=True,
        at=at,
    )
    if score is not None:
        await csat.record_answer(session, asked.id, score, at + timedelta(seconds=30))


async def test_the_report_counts_and_averages_the_answers(session: AsyncSession) -> None:
    await seed_outcomes(session)
    first, second = await _episodes(session, "whatsapp", T1)
    await _survey(session, first, 1, 5)
    await _survey(session, first, 5, 10)  # asked again later: the latest answer counts
    await _survey(session, second, 2, 5)
    web_first, web_second = await _episodes(session, "webchat", T2)
    await _survey(session, web_first, 4, 5)
    await _survey(session, web_second, None, 5)  # asked, never answered

    report = await read_report(session, ReportQuery(DAY_1, DAY_2))
    assert CSV_HEADER[-2:] == ("csat_answers", "csat_average")
    figures = {(row[0], row[1]): row[-2:] for row in report_rows(report)}
    assert figures[("2026-03-02", "whatsapp")] == ["2", "3.50"]
    assert figures[("2026-03-03", "webchat")] == ["1", "4.00"]
    assert figures[("2026-03-02", "telegram")] == ["0", ""]
    assert figures[("total", "all")] == ["3", "3.67"]
    assert report.total.csat_answers == 3

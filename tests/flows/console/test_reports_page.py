"""`/console/reports` over HTTP: an admin and an agent read the outcome report of a seeded set
of conversations; its CSV carries the hand-computed figures; a wrong range is refused."""

from __future__ import annotations

import csv
import io

from gateway.operators.accounts import create_operator
from gateway.storage.repositories.operators import OperatorRole
from gateway.tenant_ref import DEFAULT_TENANT
from tests.support.console import log_in
from tests.support.operator_logins import operator_logs_in
from tests.support.outcome_seed import (
    DAY_1,
    DAY_2,
    EXPECTED_ALL_TENANTS,
    EXPECTED_DEFAULT_TENANT,
    seed_outcomes,
)
from tests.support.stack import Stack

RANGE = f"since={DAY_1}&until={DAY_2}"
AGENT, AGENT_PASSWORD = "bruno.agent", "another long passphrase"


async def _seed(stack: Stack) -> None:
    async with stack.sessions().begin() as session:
        await seed_outcomes(session)
        await create_operator(session, AGENT, AGENT_PASSWORD, role=OperatorRole.AGENT)


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


async def test_the_csv_carries_the_hand_computed_figures(stack: Stack) -> None:
    await _seed(stack)
    await log_in(stack.client)
    answer = await stack.client.get(f"/console/reports.csv?{RANGE}")
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("text/csv")
    assert "attachment" in answer.headers["Content-Disposition"]
    header, *rows = _rows(await answer.text())
    assert header[:3] == ["day", "channel", "conversations"]
    assert rows == EXPECTED_ALL_TENANTS
    tenant = DEFAULT_TENANT.encode()
    only = await stack.client.get(f"/console/reports.csv?{RANGE}", params={"tenant": tenant})
    assert _rows(await only.text())[1:] == EXPECTED_DEFAULT_TENANT


async def test_an_admin_and_an_agent_read_the_report(stack: Stack) -> None:
    await _seed(stack)
    await log_in(stack.client)
    admin_page = await stack.client.get(f"/console/reports?{RANGE}")
    assert admin_page.status == 200
    admin_html = await admin_page.text()
    agent = await operator_logs_in(stack, AGENT, AGENT_PASSWORD)
    assert agent is not None
    status, agent_html, _ = await agent.get(f"/console/reports?{RANGE}")
    assert status == 200
    for html in (admin_html, agent_html):
        assert 'href="/console/reports"' in html  # the top navigation links it
        assert html.count("<svg") == 3
        assert "Conversations per day, by channel" in html
        assert "2026-03-03 webchat: 2" in html  # a stacked bar's title
        assert "Operator take-over: 1" in html
        assert f'href="/console/reports.csv?since={DAY_1}&amp;until={DAY_2}"' in html
        # The range's totals: 7 conversations, 2 resolved by the bot alone, 4 handed over.
        assert (
            "<td>total</td><td>all</td><td>7</td><td>9</td><td>7</td><td>3</td><td>2</td>" in html
        )
        assert "57% of conversations" in html


async def test_the_default_range_is_the_last_14_days_and_a_wrong_one_is_refused(
    stack: Stack,
) -> None:
    await log_in(stack.client)
    page = await stack.client.get("/console/reports")
    assert page.status == 200
    assert (await page.text()).count("<tr><td>20") == 14  # 14 days, each with its "all" row
    wrong = await stack.client.get("/console/reports?since=2026-03-05&until=2026-03-01")
    assert wrong.status == 400
    garbled = await stack.client.get("/console/reports.csv?since=yesterday")
    assert garbled.status == 400

"""The console's Accounts page and the roles over HTTP on a real gateway: an admin lists,
disables, enables, resets a password and removes an account; a disabled or removed account's
open login ends at its next request; an agent is refused accounts and erasures (pages and
API); the login page says how to create the first account."""

from __future__ import annotations

import re
from pathlib import Path

from aiohttp import ClientResponse
from sqlalchemy import select

from gateway.operators.accounts import create_operator
from gateway.storage.models import AuditEntry
from tests.support.console import AUTH, USERNAME, log_in, post_login, seed
from tests.support.operator_logins import OperatorBrowser, operator_logs_in
from tests.support.stack import Stack, running_stack

AGENT = "ben.agent"
AGENT_PASSWORD = "agent horse battery"
_NEW_PASSWORD = re.compile(r'<code data-new-password="ben.agent">([^<]+)</code>')


async def _agent(stack: Stack) -> OperatorBrowser:
    async with stack.sessions().begin() as session:
        await create_operator(session, AGENT, AGENT_PASSWORD)
    agent = await operator_logs_in(stack, AGENT, AGENT_PASSWORD)
    assert agent is not None
    return agent


async def _act(stack: Stack, csrf: str, action: str, **form: str) -> ClientResponse:
    return await stack.client.post(
        f"/console/accounts/{action}",
        data={"csrf_token": csrf, "username": AGENT, **form},
        allow_redirects=False,
    )


def _row(page: str, username: str) -> str:
    found = re.search(rf'<tr data-account="{re.escape(username)}">(.*?)</tr>', page)
    assert found is not None, f"no row for {username}"
    return found.group(1)


async def test_an_admin_manages_an_agents_account_from_the_accounts_page(stack: Stack) -> None:
    agent = await _agent(stack)
    csrf = await log_in(stack.client)
    page = await (await stack.client.get("/console/accounts")).text()
    assert 'href="/console/accounts"' in page  # the admin's menu has the page
    assert "<td>admin</td><td>active</td>" in _row(page, USERNAME)
    assert "you" in _row(page, USERNAME) and "<form" not in _row(page, USERNAME)
    assert "<td>agent</td><td>active</td>" in _row(page, AGENT)

    disabled = await _act(stack, csrf, "disable")
    assert disabled.status == 303
    assert disabled.headers["Location"] == "/console/accounts?done=operator%20ben.agent%20disabled"
    page = await (await stack.client.get(disabled.headers["Location"])).text()
    assert "operator ben.agent disabled" in page
    assert "<td>disabled since " in _row(page, AGENT)
    # The agent's open login ends at its next request, and it cannot log in again.
    assert await agent.get("/console") == (303, "", "/console/login")
    assert (await agent.get("/v1/operator/audit"))[0] == 401
    assert await operator_logs_in(stack, AGENT, AGENT_PASSWORD) is None

    assert (await _act(stack, csrf, "enable")).status == 303
    agent = await operator_logs_in(stack, AGENT, AGENT_PASSWORD)  # type: ignore[assignment]
    assert agent is not None

    reset = await _act(stack, csrf, "reset-password")
    assert reset.status == 200
    shown = _NEW_PASSWORD.search(await reset.text())
    assert shown is not None
    assert await agent.get("/console") == (303, "", "/console/login")
    assert await operator_logs_in(stack, AGENT, AGENT_PASSWORD) is None
    agent = await operator_logs_in(stack, AGENT, shown.group(1))  # type: ignore[assignment]
    assert agent is not None

    unconfirmed = await _act(stack, csrf, "remove", confirm="yes")
    assert unconfirmed.status == 400
    assert "type the username to confirm the removal" in await unconfirmed.text()
    removed = await _act(stack, csrf, "remove", confirm=AGENT)
    assert removed.status == 303
    page = await (await stack.client.get("/console/accounts")).text()
    assert 'data-account="ben.agent"' not in page
    assert await agent.get("/console") == (303, "", "/console/login")
    assert await operator_logs_in(stack, AGENT, shown.group(1)) is None

    async with stack.sessions()() as session:
        audited = list(
            await session.execute(
                select(AuditEntry.action, AuditEntry.actor).where(
                    AuditEntry.action.like("operator.%")
                )
            )
        )
    assert sorted(tuple(row) for row in audited) == [
        ("operator.disabled", USERNAME),
        ("operator.enabled", USERNAME),
        ("operator.password_reset", USERNAME),
        ("operator.removed", USERNAME),
    ]


async def test_an_admin_cannot_disable_or_remove_their_own_account(stack: Stack) -> None:
    csrf = await log_in(stack.client)
    for action, form in (("disable", {}), ("remove", {"confirm": USERNAME})):
        refused = await stack.client.post(
            f"/console/accounts/{action}",
            data={"csrf_token": csrf, "username": USERNAME, **form},
        )
        assert refused.status == 409
        assert "you cannot" in await refused.text() and "your own account" in await refused.text()
    assert (await stack.client.get("/console")).status == 200  # still logged in
    assert (
        await stack.client.post("/console/accounts/disable", data={"username": AGENT})
    ).status == 403


async def test_an_agent_is_refused_accounts_and_erasures(stack: Stack) -> None:
    seeded = await seed(stack)
    cid = seeded.customer_id
    agent = await _agent(stack)
    refusal = f"operator &#x27;{AGENT}&#x27; is an agent: only an admin may do this"

    status, page, _ = await agent.get("/console")
    assert status == 200 and 'href="/console/accounts"' not in page
    status, page, _ = await agent.get("/console/accounts")
    assert status == 403 and refusal in page
    status, page = await agent.post("/console/accounts/disable", username=USERNAME)
    assert status == 403 and refusal in page

    status, page, _ = await agent.get(f"/console/customers/{cid}")
    assert status == 200
    assert f'action="/console/customers/{cid}/erase"' not in page
    assert "Only an admin can erase" in page
    status, page = await agent.post(
        f"/console/customers/{cid}/erase", reason="asked by the customer", confirm=cid
    )
    assert status == 403 and refusal in page
    status, body = await agent.api(
        "DELETE", f"/v1/operator/customers/{cid}", {"reason": "asked by the customer"}
    )
    assert (status, body) == (
        403,
        {
            "error": "admin_only",
            "detail": f"operator '{AGENT}' is an agent: only an admin may do this",
        },
    )
    # Nothing was erased, nor the admin's account touched.
    assert (await stack.client.get(f"/v1/operator/customers/{cid}", headers=AUTH)).status == 200
    assert await operator_logs_in(stack, USERNAME, "correct horse battery") is not None
    # The API key acts as an admin.
    erased = await stack.client.delete(
        f"/v1/operator/customers/{cid}",
        json={"reason": "asked by the customer", "actor": "dpo"},
        headers=AUTH,
    )
    assert erased.status == 200


async def test_the_login_page_says_how_to_create_the_first_account(tmp_path: Path) -> None:
    hint = "relaydesk operator add NAME --admin"
    async with running_stack("embedded", tmp_path) as stack:
        first = await (await stack.client.get("/console/login")).text()
        assert "No operator account exists yet" in first and hint in first
        tried = await post_login(stack.client, "zoe", "correct horse battery")
        assert tried.status == 401 and hint in tried.page
        async with stack.sessions().begin() as session:
            await create_operator(session, "zoe", "correct horse battery")
        later = await (await stack.client.get("/console/login")).text()
        assert "Operator login" in later and hint not in later

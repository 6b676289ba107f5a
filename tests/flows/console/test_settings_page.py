"""The console's Settings page over HTTP on a real gateway: the form generated from the schema
shows a level's keys, a review names the keys that cannot be used or lists every change before
and after, a save is audited under the admin's name, a save over a change made since the review
is refused, and an agent is refused the page."""

from __future__ import annotations

import json
import re

from gateway.operators.accounts import create_operator
from gateway.storage.repositories import audit, tenants
from gateway.storage.repositories.operators import OperatorRole
from tests.support.console import log_in
from tests.support.operator_logins import operator_logs_in
from tests.support.stack import Stack

HOST = "shop.example.com"
LEVEL = {"domain": "default", "host": HOST, "assistant": "", "channel": ""}
_HIDDEN = re.compile(r'<input type="hidden" name="(document|base)" value="([^"]*)"')


async def test_an_admin_reviews_and_saves_a_change(stack: Stack) -> None:
    async with stack.sessions().begin() as session:
        await tenants.save_tenant_settings(
            session, domain="default", host=HOST, settings={"window": 16384}
        )
    csrf = await log_in(stack.client)
    client = stack.client

    form = await (await client.get(f"/console/settings?host={HOST}")).text()
    assert 'id="level-path">domain/default/host/shop.example.com<' in form
    assert 'name="window"' in form and 'value="16384"' in form  # the level's stored value
    assert 'name="handoff_message"' in form and 'name="rate_limits"' in form
    assert 'min="1024.0"' in form  # the schema's bound, checked by the browser too
    # names the schema's descriptions quote between backticks read as code, not as backticks
    assert "<code>content_sid</code> (Twilio)" in form and "`content_sid`" not in form

    refused = await client.post(
        "/console/settings/review",
        data={"csrf_token": csrf, **LEVEL, "window": "100", "max_tool_rounds": "many"},
    )
    page = await refused.text()
    assert refused.status == 422
    assert "<code>max_tool_rounds</code>: give a whole number" in page
    refused = await client.post(
        "/console/settings/review", data={"csrf_token": csrf, **LEVEL, "window": "100"}
    )
    assert refused.status == 422 and "<code>window</code>: Input should be greater" in (
        await refused.text()
    )

    reviewed = await client.post(
        "/console/settings/review",
        data={"csrf_token": csrf, **LEVEL, "handoff_message": "Um momento!"},
    )
    page = await reviewed.text()
    assert reviewed.status == 200
    assert '<tr data-key="handoff_message">' in page and '<tr data-key="window">' in page
    hidden = {
        name: json.loads(value.replace("&quot;", '"')) for name, value in _HIDDEN.findall(page)
    }
    assert hidden == {"document": {"handoff_message": "Um momento!"}, "base": {"window": 16384}}

    saved = await client.post(
        "/console/settings/save",
        data={
            "csrf_token": csrf,
            **LEVEL,
            "document": json.dumps(hidden["document"]),
            "base": json.dumps(hidden["base"]),
            "reason": "shop tone",
        },
        allow_redirects=False,
    )
    assert saved.status == 303 and "saved" in saved.headers["Location"]
    async with stack.sessions()() as session:
        stored = await tenants.stored_level(session, domain="default", host=HOST)
        [entry] = await audit.list_audit(session, action="settings_changed")
    assert stored == {"handoff_message": "Um momento!"}
    assert entry.actor == "ana.ops" and entry.details["changed"] == ["handoff_message", "window"]

    # The same save again: the level changed since that review.
    stale = await client.post(
        "/console/settings/save",
        data={
            "csrf_token": csrf,
            **LEVEL,
            "document": json.dumps({"window": 9000}),
            "base": json.dumps(hidden["base"]),
            "reason": "late",
        },
        allow_redirects=False,
    )
    assert stale.status == 409


async def test_an_agent_is_refused_the_settings_page(stack: Stack) -> None:
    async with stack.sessions().begin() as session:
        await create_operator(session, "ben.agent", "agent horse battery", role=OperatorRole.AGENT)
    agent = await operator_logs_in(stack, "ben.agent", "agent horse battery")
    assert agent is not None
    status, page, _ = await agent.get("/console/settings")
    assert status == 403
    status, _ = await agent.post(
        "/console/settings/save",
        **LEVEL,
        document=json.dumps({"window": 9000}),
        base="{}",
        reason="x",
    )
    assert status == 403
    status, home, _ = await agent.get("/console")
    assert 'href="/console/settings"' not in home
    async with stack.sessions()() as session:
        assert await tenants.stored_level(session, domain="default", host=HOST) is None

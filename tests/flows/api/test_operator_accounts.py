"""`/v1/operator/accounts` on a real gateway: every account action through the JSON API with
the API key (acting as an admin) and with an admin's login, and an agent's login refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.operators.accounts import create_operator
from gateway.storage.repositories import audit
from gateway.storage.repositories.operators import OperatorRole
from tests.support.console import AUTH
from tests.support.operator_logins import operator_logs_in
from tests.support.stack import Stack, running_stack

PASSWORD = "correct horse battery"
ADMIN_ONLY = "is an agent: only an admin may do this"


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack("embedded", tmp_path) as running:
        async with running.sessions().begin() as session:
            await create_operator(session, "zoe.admin", PASSWORD, role=OperatorRole.ADMIN)
        yield running


async def test_the_api_key_adds_lists_disables_enables_resets_and_removes(stack: Stack) -> None:
    client = stack.client
    added = await client.post(
        "/v1/operator/accounts",
        json={"username": "ana.agent", "password": PASSWORD},
        headers=AUTH,
    )
    assert added.status == 201
    body = await added.json()
    assert (body["username"], body["role"], body["disabled_at"]) == ("ana.agent", "agent", None)
    taken = await client.post(
        "/v1/operator/accounts",
        json={"username": "ana.agent", "password": PASSWORD, "role": "admin"},
        headers=AUTH,
    )
    assert taken.status == 409

    listed = await (await client.get("/v1/operator/accounts", headers=AUTH)).json()
    assert [(a["username"], a["role"]) for a in listed["accounts"]] == [
        ("ana.agent", "agent"),
        ("zoe.admin", "admin"),
    ]
    agent = await operator_logs_in(stack, "ana.agent", PASSWORD)
    assert agent is not None

    disabled = await client.post("/v1/operator/accounts/ana.agent/disable", headers=AUTH)
    assert disabled.status == 200 and (await disabled.json())["disabled_at"] is not None
    assert (await agent.get("/console"))[0] == 303  # its open login ended
    assert await operator_logs_in(stack, "ana.agent", PASSWORD) is None
    enabled = await client.post("/v1/operator/accounts/ana.agent/enable", headers=AUTH)
    assert enabled.status == 200 and (await enabled.json())["disabled_at"] is None

    generated = await client.post("/v1/operator/accounts/ana.agent/reset-password", headers=AUTH)
    new_password = (await generated.json())["password"]
    assert generated.status == 200 and len(new_password) == 16
    assert await operator_logs_in(stack, "ana.agent", new_password) is not None
    chosen = await client.post(
        "/v1/operator/accounts/ana.agent/reset-password",
        json={"password": "a password she chose"},
        headers=AUTH,
    )
    assert await chosen.json() == {"username": "ana.agent", "password": None}
    assert await operator_logs_in(stack, "ana.agent", "a password she chose") is not None

    removed = await client.delete("/v1/operator/accounts/ana.agent", headers=AUTH)
    assert await removed.json() == {"username": "ana.agent", "removed": True}
    missing = await client.post("/v1/operator/accounts/ana.agent/enable", headers=AUTH)
    assert missing.status == 404
    assert (await missing.json())["detail"] == "no operator account 'ana.agent'"

    last = await client.delete("/v1/operator/accounts/zoe.admin", headers=AUTH)
    assert last.status == 409
    assert "'zoe.admin' is the last active admin" in (await last.json())["detail"]

    async with stack.sessions()() as session:
        entries = await audit.list_audit(session)
    assert sorted(e.action for e in entries if e.action.startswith("operator.")) == [
        "operator.added",
        "operator.disabled",
        "operator.enabled",
        "operator.password_reset",
        "operator.password_reset",
        "operator.removed",
    ]
    assert {e.actor for e in entries if e.action.startswith("operator.")} == {"api-key"}


async def test_an_admins_login_manages_accounts_and_an_agents_is_refused(stack: Stack) -> None:
    admin = await operator_logs_in(stack, "zoe.admin", PASSWORD)
    assert admin is not None
    status, body = await admin.api(
        "POST", "/v1/operator/accounts", {"username": "ana.agent", "password": PASSWORD}
    )
    assert status == 201
    status, body = await admin.api("POST", "/v1/operator/accounts/zoe.admin/disable")
    assert status == 409
    assert body == {
        "error": "account_action_refused",
        "detail": "you cannot disable your own account; ask another admin",
    }

    agent = await operator_logs_in(stack, "ana.agent", PASSWORD)
    assert agent is not None
    refused = {"error": "admin_only", "detail": f"operator 'ana.agent' {ADMIN_ONLY}"}
    for method, path, sent in (
        ("GET", "/v1/operator/accounts", None),
        ("POST", "/v1/operator/accounts", {"username": "eve", "password": PASSWORD}),
        ("POST", "/v1/operator/accounts/zoe.admin/disable", None),
        ("POST", "/v1/operator/accounts/zoe.admin/reset-password", {}),
        ("DELETE", "/v1/operator/accounts/zoe.admin", None),
    ):
        assert await agent.api(method, path, sent) == (403, refused), (method, path)
    status, body = await admin.api("GET", "/v1/operator/accounts")
    assert status == 200
    assert [(a["username"], a["disabled_at"]) for a in body["accounts"]] == [  # type: ignore[index]
        ("ana.agent", None),
        ("zoe.admin", None),
    ]

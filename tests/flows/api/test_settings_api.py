"""`/v1/settings` on a real gateway: levels read, replaced and merged, refusals that name the
key, the audit entry of every change, the schema, and who may call it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.operators.accounts import create_operator
from gateway.storage.repositories import audit, tenants
from gateway.storage.repositories.operators import OperatorRole
from tests.support.app_settings import AUTH
from tests.support.console import PASSWORD
from tests.support.operator_logins import operator_logs_in
from tests.support.stack import running_stack

HOST_LEVEL = "/v1/settings/domain/default/host/shop.example.com"


async def _send(
    client: TestClient,  # type: ignore[type-arg]
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
) -> tuple[int, Any]:
    response = await client.request(method, path, json=body, headers=AUTH)
    return response.status, await response.json()


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_levels_are_replaced_merged_read_and_audited(tmp_path: Path, backend: str) -> None:
    async with running_stack(backend, tmp_path) as stack:
        client = stack.client
        status, put = await _send(
            client,
            "PUT",
            HOST_LEVEL,
            {
                "settings": {
                    "instruction": "Shoes only.",
                    "rate_limits": {"visitor_ids_per_address": "5/hour"},
                },
                "reason": "shop launch",
                "actor": "ana",
            },
        )
        assert status == 200, put
        assert put["changed"] == ["instruction", "rate_limits.visitor_ids_per_address"]
        assert put["audit"]["action"] == "settings_changed" and put["audit"]["actor"] == "ana"

        status, merged = await _send(
            client,
            "PATCH",
            HOST_LEVEL,
            {"settings": {"rate_limits": {"webchat_messages_per_visitor": None}}, "reason": "busy"},
        )
        assert status == 200, merged
        assert merged["settings"] == {
            "instruction": "Shoes only.",
            "rate_limits": {
                "visitor_ids_per_address": "5/hour",
                "webchat_messages_per_visitor": None,
            },
        }
        status, channel = await _send(
            client,
            "PUT",
            f"{HOST_LEVEL}/channel/webchat",
            {"settings": {"handoff_message": "Um momento!"}, "reason": "web chat tone"},
        )
        assert status == 200, channel

        # What is stored is what the lookup reads: the host's keys over the defaults.
        async with stack.sessions()() as session:
            effective = await tenants.tenant_settings(
                session, host="shop.example.com", channel="webchat"
            )
            entries = await audit.list_audit(session, action="settings_changed")
        assert effective.instruction == "Shoes only."
        assert effective.rate_limits.webchat_messages_per_visitor is None
        assert effective.handoff_message == "Um momento!"
        assert [e.subject_id for e in entries] == [
            "domain/default/host/shop.example.com/channel/webchat",
            "domain/default/host/shop.example.com",
            "domain/default/host/shop.example.com",
        ]
        assert entries[1].details == {
            "changed": ["rate_limits.webchat_messages_per_visitor"],
            "before": {},
            "after": {"rate_limits.webchat_messages_per_visitor": None},
        }
        assert entries[2].details["after"]["instruction"] == "Shoes only."

        status, read = await _send(client, "GET", HOST_LEVEL)
        assert status == 200 and read["level"]["kind"] == "host"
        assert read["settings"] == {
            **merged["settings"],
            "channels": {"webchat": {"handoff_message": "Um momento!"}},
        }
        status, read = await _send(client, "GET", f"{HOST_LEVEL}/channel/webchat?effective=true")
        assert status == 200
        assert read["effective"]["handoff_message"] == "Um momento!"
        assert read["effective"]["instruction"] == "Shoes only."
        assert read["effective"]["window"] == 8192  # a default

        # PUT replaces: the keys left out are gone (the channel block with them).
        status, replaced = await _send(
            client, "PUT", HOST_LEVEL, {"settings": {"window": 16384}, "reason": "reset"}
        )
        assert status == 200 and replaced["settings"] == {"window": 16384}
        status, again = await _send(
            client, "PUT", HOST_LEVEL, {"settings": {"window": 16384}, "reason": "same"}
        )
        assert status == 200 and again["changed"] == [] and again["audit"] is None


async def test_a_refusal_names_the_bad_key_and_changes_nothing(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        client = stack.client
        for body, key in [
            (
                {"rate_limits": {"model_calls_per_customer": "lots"}},
                "rate_limits.model_calls_per_customer",
            ),
            ({"windw": 9000}, "windw"),
            ({"channels": {"phone": {"window": 10}}}, "channels.phone.window"),
        ]:
            status, refused = await _send(
                client, "PATCH", HOST_LEVEL, {"settings": body, "reason": "try"}
            )
            assert status == 422, refused
            assert refused["error"] == "invalid_settings"
            assert f"{key}:" in refused["detail"]
        status, read = await _send(client, "GET", HOST_LEVEL)
        assert status == 200 and read["settings"] == {}
        async with stack.sessions()() as session:
            assert await audit.list_audit(session, action="settings_changed") == []

        status, refused = await _send(client, "GET", "/v1/settings/domain/default/house/x")
        assert status == 404 and refused["error"] == "unknown_level"
        status, refused = await _send(client, "PATCH", HOST_LEVEL, {"settings": {}, "reason": " "})
        assert status == 400


async def test_the_schema_and_the_callers_it_refuses(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        client = stack.client
        status, schema = await _send(client, "GET", "/v1/settings/schema")
        assert status == 200
        assert schema["properties"]["instruction"]["type"] == "string"
        assert "channels" in schema["properties"] and "required" not in schema
        for method in ("GET", "PUT", "PATCH"):
            response = await client.request(
                method, HOST_LEVEL, json={"settings": {"window": 9000}, "reason": "x"}
            )
            assert response.status == 401
        # a level with a line break in it is refused for the credentials first, not 404
        assert (await client.get("/v1/settings/domain/a%0Ab")).status == 401
        paths = (await (await client.get("/openapi.json")).json())["paths"]
        assert set(paths["/v1/settings/{level}"]) == {"get", "put", "patch"}
        assert "422" in paths["/v1/settings/{level}"]["patch"]["responses"]


async def test_an_admin_login_changes_settings_and_an_agents_is_refused(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        async with stack.sessions().begin() as session:
            await create_operator(session, "ana.admin", PASSWORD, role=OperatorRole.ADMIN)
            await create_operator(session, "ben.agent", PASSWORD, role=OperatorRole.AGENT)
        admin = await operator_logs_in(stack, "ana.admin", PASSWORD)
        agent = await operator_logs_in(stack, "ben.agent", PASSWORD)
        assert admin is not None and agent is not None
        body = {"settings": {"handoff_message": "Um momento!"}, "reason": "tone"}

        status, refused = await agent.api("PATCH", HOST_LEVEL, body)
        assert status == 403 and isinstance(refused, dict)
        assert refused["error"] == "admin_only"
        status, read = await agent.api("GET", HOST_LEVEL)  # reading is any operator's
        assert status == 200 and isinstance(read, dict) and read["settings"] == {}

        status, changed = await admin.api("PATCH", HOST_LEVEL, body)
        assert status == 200 and isinstance(changed, dict)
        assert changed["audit"]["actor"] == "ana.admin"  # the login, not the body, names who
        async with stack.sessions()() as session:
            [entry] = await audit.list_audit(session, action="settings_changed")
        assert entry.actor == "ana.admin"


async def test_a_domain_change_that_breaks_a_hosts_level_is_refused(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        client = stack.client
        body = {"settings": {"threshold_tokens": 2000}, "reason": "small windows"}
        assert (await _send(client, "PUT", HOST_LEVEL, body))[0] == 200
        status, refused = await _send(
            client,
            "PATCH",
            "/v1/settings/domain/default",
            {"settings": {"low_water_tokens": 2500}, "reason": "fewer summaries"},
        )
        assert status == 422, refused
        assert "domain/default/host/shop.example.com" in refused["detail"]
        status, read = await _send(client, "GET", "/v1/settings/domain/default")
        assert status == 200 and read["settings"] == {}

"""MCP tools through the official SDK against the SDK's own server: listed, gated, called with
the identity assertion in `_meta` and as the header."""

from __future__ import annotations

import json

import jwt

from context import TiktokenCounter, load_encoding
from gateway.providers.tool_calls import ToolCall
from gateway.tenants import TenantSettings, effective_settings
from gateway.tools.assertion import AssertionSigner
from gateway.tools.catalog import catalog_of
from gateway.tools.mcp_actions import META_KEY, McpActions
from gateway.tools.runner import ActionRunner, Caller
from identity.levels import LinkLevel
from outbound.fetcher import SafeFetcher
from outbound.policy import FetchPolicy
from tests.gateway.tools.mcp_server import crm, serving

KEY = "m" * 40
ANA = Caller(
    customer_id="cus_ana",
    level=LinkLevel.ASSERTED,
    channel="webchat",
    conversation="webchat:acct-7",
    allowed_scopes=frozenset({"public", "profile"}),
)


def _settings(url: str) -> TenantSettings:
    return effective_settings(
        [
            {
                "mcp_servers": [
                    {
                        "name": "crm",
                        "url": url,
                        "headers_from_env": {"Authorization": "CRM_TOKEN"},
                        "tools": {
                            "lookup_ticket": {"min_link_level": "asserted"},
                            "broken": {"min_link_level": "anonymous"},
                        },
                    }
                ]
            }
        ]
    )


async def test_an_mcp_tool_is_listed_gated_and_called_as_the_customer() -> None:
    server, seen = crm()
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]))
    environ = {"CRM_TOKEN": "Bearer crm-secret"}
    mcp = McpActions(fetcher, environ)
    runner = ActionRunner(
        fetcher, AssertionSigner(shared_key=KEY), environ, TiktokenCounter(load_encoding()), mcp
    )
    try:
        async with serving(server) as url:
            settings = _settings(url)
            listings = await mcp.listings(settings.mcp_servers)
            catalog = catalog_of([], settings.mcp_servers, listings)
            offered = {spec.name: spec for spec in catalog.offered(LinkLevel.ASSERTED)}

            run = await runner.run(
                ToolCall("call_1", "lookup_ticket", '{"ticket_id": "T-981", "customer_id": "x"}'),
                offered,
                ANA,
                max_result_tokens=200,
            )
            failed = await runner.run(
                ToolCall("call_2", "broken", '{"ticket_id": "T-1"}'),
                offered,
                ANA,
                max_result_tokens=200,
            )
    finally:
        await fetcher.aclose()

    # Listed by the server, offered only as the tenant gates them.
    assert sorted(listing.name for listing in listings) == [
        "broken",
        "delete_everything",
        "lookup_ticket",
    ]
    assert sorted(offered) == ["broken", "lookup_ticket"]
    assert "ticket_id" in offered["lookup_ticket"].parameters["properties"]
    assert run.status == "ok", run.content
    assert json.loads(run.content)["state"] == "waiting for the warehouse"
    assert run.dropped == ("customer_id",)
    [call] = seen
    assert call["ticket_id"] == "T-981" and call["token"] == "Bearer crm-secret"
    in_meta = call["meta"][META_KEY]
    assert in_meta == call["header"]
    claims = jwt.decode(in_meta, KEY, algorithms=["HS256"], audience="lookup_ticket")
    assert claims["sub"] == "cus_ana" and claims["link_level"] == "asserted"
    assert failed.status == "failed" and "the CRM database is down" in failed.content


async def test_an_unreachable_server_lists_nothing() -> None:
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]))
    try:
        settings = _settings("http://127.0.0.1:9/mcp")
        listings = await McpActions(fetcher, {"CRM_TOKEN": "t"}).listings(settings.mcp_servers)
    finally:
        await fetcher.aclose()

    assert listings == ()


async def test_a_server_at_an_internal_address_is_refused_by_the_fetcher() -> None:
    server, seen = crm()
    fetcher = SafeFetcher(FetchPolicy.allowing([]))  # loopback not listed
    try:
        async with serving(server) as url:
            listings = await McpActions(fetcher, {"CRM_TOKEN": "t"}).listings(
                _settings(url).mcp_servers
            )
    finally:
        await fetcher.aclose()

    assert listings == () and seen == []

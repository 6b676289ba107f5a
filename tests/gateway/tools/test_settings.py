from __future__ import annotations

from typing import Any

import pytest

from gateway.tenants import TenantConfigError, effective_settings

ORDER_STATUS: dict[str, Any] = {
    "name": "order_status",
    "description": "Where an order of the customer is.",
    "parameters": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
    "min_link_level": "verified",
    "scopes": ["profile"],
    "endpoint": {
        "url": "https://api.example.org/orders/status",
        "headers_from_env": {"Authorization": "SHOP_API_TOKEN"},
    },
    "facts": {"/status": "last_order_status"},
}


def test_a_tool_is_read_from_any_level_with_its_defaults() -> None:
    settings = effective_settings([{}, {"tools": [ORDER_STATUS]}])

    [tool] = settings.tools
    assert tool.kind == "read" and tool.approval == "customer"
    assert tool.endpoint.method == "POST" and tool.endpoint.timeout_s == 10.0
    assert tool.endpoint.headers_from_env == {"Authorization": "SHOP_API_TOKEN"}
    assert settings.max_tool_rounds == 3
    assert settings.state_timeout_ms == 300


def test_the_assistant_level_replaces_the_domains_tools() -> None:
    own = {**ORDER_STATUS, "name": "track_parcel"}

    settings = effective_settings([{"tools": [own]}, {}, {"tools": [ORDER_STATUS]}])

    assert [tool.name for tool in settings.tools] == ["track_parcel"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"name": "order status"}, "tools.0.name"),
        ({"name": "start_verification"}, "the gateway's own action"),
        ({"parameters": {"type": "array"}}, 'must have "type": "object"'),
        ({"min_link_level": "trusted"}, "tools.0.min_link_level"),
        ({"endpoint": {"url": "ftp://api.example.org/x"}}, "tools.0.endpoint.url"),
        ({"endpoint": {"url": "https://a.example", "timeout_s": 600}}, "timeout_s"),
        (
            {"endpoint": {"url": "https://a.example", "headers_from_env": {"X-Key": "secret!"}}},
            "not an environment variable name",
        ),
        (
            {
                "endpoint": {
                    "url": "https://a.example",
                    "headers_from_env": {"Idempotency-Key": "K"},
                }
            },
            "set by the gateway",
        ),
        ({"facts": {"status": "last_order_status"}}, "not a JSON pointer"),
        ({"approval": "operator"}, "only a write waits for an operator"),
        ({"secret": "inline"}, "tools.0.secret"),
    ],
)
def test_a_bad_tool_is_refused_naming_its_key(change: dict[str, Any], problem: str) -> None:
    with pytest.raises(TenantConfigError, match="invalid tenant settings") as refused:
        effective_settings([{"tools": [{**ORDER_STATUS, **change}]}])

    assert problem in str(refused.value)


def test_one_name_for_two_actions_is_refused() -> None:
    server = {
        "name": "crm",
        "url": "http://127.0.0.1:9000/mcp",
        "tools": {"order_status": {"kind": "read", "min_link_level": "asserted"}},
    }

    with pytest.raises(TenantConfigError, match="'order_status' is defined twice"):
        effective_settings([{"tools": [ORDER_STATUS], "mcp_servers": [server]}])


def test_an_mcp_servers_tools_keep_their_own_gates() -> None:
    server = {
        "name": "crm",
        "url": "http://127.0.0.1:9000/mcp",
        "tools": {
            "lookup_ticket": {"min_link_level": "asserted", "scopes": ["profile"]},
            "close_ticket": {"kind": "write", "approval": "operator"},
        },
    }

    [crm] = effective_settings([{"mcp_servers": [server]}]).mcp_servers

    assert crm.tools["lookup_ticket"].min_link_level == "asserted"
    assert crm.tools["close_ticket"].kind == "write"
    assert crm.tools["close_ticket"].min_link_level == "verified"

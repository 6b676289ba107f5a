from __future__ import annotations

import json

from gateway.tenants import effective_settings
from gateway.tools.catalog import McpToolListing, catalog_of
from identity.levels import LinkLevel

SETTINGS = effective_settings(
    [
        {
            "tools": [
                {
                    "name": "opening_hours",
                    "description": "The store's opening hours.",
                    "min_link_level": "anonymous",
                    "endpoint": {"url": "https://api.example.org/hours", "method": "GET"},
                },
                {
                    "name": "order_status",
                    "description": "Where an order is.",
                    "parameters": {
                        "type": "object",
                        "properties": {"order_id": {"type": "string"}},
                    },
                    "scopes": ["profile"],
                    "endpoint": {"url": "https://api.example.org/orders"},
                    "facts": {"/status": "last_order_status"},
                },
            ],
            "mcp_servers": [
                {
                    "name": "crm",
                    "url": "http://127.0.0.1:9000/mcp",
                    "tools": {"lookup_ticket": {"min_link_level": "asserted"}},
                }
            ],
        }
    ]
)
LISTINGS = (
    McpToolListing("crm", "lookup_ticket", "A ticket's state.", '{"type": "object"}'),
    McpToolListing("crm", "delete_everything", "Not gated by the tenant.", '{"type": "object"}'),
)
CATALOG = catalog_of(SETTINGS.tools, SETTINGS.mcp_servers, LISTINGS)


def test_the_catalog_holds_the_settings_actions_and_only_the_gated_mcp_tools() -> None:
    assert list(CATALOG.actions) == ["opening_hours", "order_status", "lookup_ticket"]
    ticket = CATALOG.actions["lookup_ticket"]
    assert ticket.server is not None
    assert (ticket.server.name, ticket.min_level, ticket.description) == (
        "crm",
        LinkLevel.ASSERTED,
        "A ticket's state.",
    )
    order = CATALOG.actions["order_status"]
    assert order.parameters["properties"] == {"order_id": {"type": "string"}}
    assert order.facts == (("/status", "last_order_status"),)


def test_an_anonymous_visitor_is_offered_the_open_action_and_verification() -> None:
    names = [spec.name for spec in CATALOG.offered(LinkLevel.ANONYMOUS)]

    assert names == ["opening_hours", "start_verification"]
    assert [spec.name for spec in CATALOG.held_back(LinkLevel.ANONYMOUS)] == [
        "order_status",
        "lookup_ticket",
    ]


def test_a_verified_customer_is_offered_everything_and_no_verification() -> None:
    names = [spec.name for spec in CATALOG.offered(LinkLevel.VERIFIED)]

    assert names == ["opening_hours", "order_status", "lookup_ticket"]


def test_the_verification_action_asks_for_one_identifier() -> None:
    [*_, verification] = CATALOG.offered(LinkLevel.ASSERTED)

    assert verification.name == "start_verification"
    assert json.loads(verification.parameters_json)["required"] == ["identifier"]


def test_a_tenant_without_actions_offers_nothing() -> None:
    empty = catalog_of([], [], [])

    assert empty.empty and empty.offered(LinkLevel.ANONYMOUS) == ()

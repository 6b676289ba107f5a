"""A tenant's actions as frozen specs, and the ones a channel identity is offered.

Settings are read once per tenant into `ActionSpec`s; past this module only specs travel. An
MCP tool's description and schema are the server's own (from its tool list); its gates come
from the tenant's settings, and a tool the settings do not list is never offered.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from gateway.tools.names import START_VERIFICATION
from gateway.tools.settings import EndpointSettings, McpServerSettings, ToolSettings
from identity.levels import LinkLevel
from identity.tool_reach import ActionReach, offer

__all__ = [
    "VERIFICATION_SPEC",
    "ActionSpec",
    "Catalog",
    "McpToolListing",
    "catalog_of",
]


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """One action as the model sees it (name, description, JSON Schema of its arguments) and
    as the gateway gates and calls it."""

    name: str
    description: str
    parameters_json: str  # the JSON Schema, as text: a spec stays hashable and frozen
    kind: Literal["read", "write"]
    min_level: LinkLevel
    scopes: frozenset[str]
    approval: Literal["customer", "operator"] = "customer"
    endpoint: EndpointSettings | None = None  # an HTTP action
    server: McpServerSettings | None = None  # an MCP server's tool
    facts: tuple[tuple[str, str], ...] = ()  # (JSON pointer into the result, fact key)

    @property
    def parameters(self) -> dict[str, Any]:
        schema: dict[str, Any] = json.loads(self.parameters_json)
        return schema

    @property
    def reach(self) -> ActionReach:
        return ActionReach(self.name, self.min_level, self.scopes)


# Offered whenever a gated action is out of reach (`gateway.tools.verification`).
VERIFICATION_SPEC = ActionSpec(
    name=START_VERIFICATION,
    description=(
        "Send the customer a one-time code to prove they own a phone number or e-mail "
        "address already known to us, so that actions needing a verified identity become "
        "available. Use it when the customer wants something that needs verification."
    ),
    parameters_json=json.dumps(
        {
            "type": "object",
            "properties": {
                "identifier": {
                    "type": "string",
                    "description": "The customer's phone number in E.164 (+5511…) or e-mail.",
                    "minLength": 3,
                    "maxLength": 320,
                }
            },
            "required": ["identifier"],
        },
        sort_keys=True,
    ),
    kind="read",
    min_level=LinkLevel.ANONYMOUS,
    scopes=frozenset(),
)


@dataclass(frozen=True, slots=True)
class McpToolListing:
    """A tool as an MCP server lists it."""

    server: str
    name: str
    description: str
    input_schema_json: str


@dataclass(frozen=True, slots=True)
class Catalog:
    """A tenant's actions by name, in the settings' order."""

    actions: Mapping[str, ActionSpec]

    def offered(self, level: LinkLevel) -> tuple[ActionSpec, ...]:
        """The actions offered at ``level``, plus `start_verification` when any is held back."""
        split = offer((spec.reach for spec in self.actions.values()), level)
        offered = tuple(self.actions[name] for name in split.offered)
        return offered + (VERIFICATION_SPEC,) if split.needs_verification else offered

    def held_back(self, level: LinkLevel) -> tuple[ActionSpec, ...]:
        split = offer((spec.reach for spec in self.actions.values()), level)
        return tuple(self.actions[name] for name in split.out_of_reach)

    @property
    def empty(self) -> bool:
        return not self.actions


def catalog_of(
    tools: Iterable[ToolSettings],
    servers: Iterable[McpServerSettings] = (),
    listings: Iterable[McpToolListing] = (),
) -> Catalog:
    """The specs of the settings' HTTP actions, then of the listed MCP tools the settings gate
    (a listed tool the settings leave out is not offered; a gated tool the server does not
    list is left out until it does)."""
    actions: dict[str, ActionSpec] = {}
    for tool in tools:
        actions[tool.name] = ActionSpec(
            name=tool.name,
            description=tool.description,
            parameters_json=json.dumps(tool.parameters, sort_keys=True),
            kind=tool.kind,
            min_level=LinkLevel.parse(tool.min_link_level),
            scopes=frozenset(tool.scopes),
            approval=tool.approval,
            endpoint=tool.endpoint,
            facts=tuple(tool.facts.items()),
        )
    by_name = {server.name: server for server in servers}
    for listing in listings:
        server = by_name.get(listing.server)
        gate = server.tools.get(listing.name) if server is not None else None
        if server is None or gate is None or listing.name in actions:
            continue
        actions[listing.name] = ActionSpec(
            name=listing.name,
            description=listing.description,
            parameters_json=listing.input_schema_json,
            kind=gate.kind,
            min_level=LinkLevel.parse(gate.min_link_level),
            scopes=frozenset(gate.scopes),
            approval=gate.approval,
            server=server,
        )
    return Catalog(MappingProxyType(actions))

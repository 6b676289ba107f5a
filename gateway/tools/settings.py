"""The actions a tenant offers its model, as tenant settings (each level, like every setting).

`tools` are business endpoints called over HTTP; `mcp_servers` are MCP servers (streamable
HTTP) whose tools are offered by name. Secrets for either never sit in the settings: a header's
value is read from the environment variable the settings name (`headers_from_env`), when the
call is made.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gateway.tools.names import BUILT_IN, TOOL_NAME_PATTERN

LevelName = Literal["verified", "asserted", "inferred", "anonymous"]
# The longest a business endpoint may keep a turn waiting, per call.
MAX_TIMEOUT_S: Final = 60.0
_HEADER_PATTERN = r"^[A-Za-z0-9-]{1,64}$"
_ENV_PATTERN = r"^[A-Z_][A-Z0-9_]{0,127}$"
# Headers the gateway sets itself; a setting cannot replace them.
RESERVED_HEADERS: Final = frozenset(
    {"x-relaydesk-identity", "idempotency-key", "content-type", "content-length", "host"}
)


class EndpointSettings(BaseModel):
    """Where a tool (or the operational state) is called: an http(s) URL, its method, how
    long it may take, and headers whose values come from environment variables."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(pattern=r"^https?://[^\s]+$", max_length=2048)
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    timeout_s: float = Field(10.0, gt=0, le=MAX_TIMEOUT_S)
    headers_from_env: dict[str, str] = {}

    @field_validator("headers_from_env")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        return _checked_headers(value)


class ActionGate(BaseModel):
    """How the gateway treats an action, whoever serves it: read or write, the weakest link
    level it serves, the scopes it may learn, and (a write) who approves it; `approval:
    "operator"` makes a write wait for an operator in the console as well."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["read", "write"] = "read"
    min_link_level: LevelName = "verified"
    scopes: list[str] = []
    approval: Literal["customer", "operator"] = "customer"

    @model_validator(mode="after")
    def _approval_for_writes(self) -> Self:
        if self.approval == "operator" and self.kind != "write":
            raise ValueError("only a write waits for an operator's approval")
        return self


class ToolSettings(ActionGate):
    """One business action. `parameters` is the JSON Schema (an object) of the arguments the
    model passes; `facts` maps a JSON pointer into the result to the fact key it is stored
    under."""

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str = Field(min_length=1, max_length=1024)
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    endpoint: EndpointSettings
    facts: dict[str, str] = {}

    @field_validator("name")
    @classmethod
    def _not_built_in(cls, value: str) -> str:
        if value in BUILT_IN:
            raise ValueError(f"{value!r} is the gateway's own action")
        return value

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        return checked_parameters(value)

    @field_validator("facts")
    @classmethod
    def _pointers(cls, value: dict[str, str]) -> dict[str, str]:
        for pointer, key in value.items():
            if pointer and not pointer.startswith("/"):
                raise ValueError(f"{pointer!r} is not a JSON pointer ('' or '/…')")
            if not key.strip():
                raise ValueError(f"the fact key for {pointer!r} is empty")
        return value


class McpToolSettings(ActionGate):
    """How the gateway treats one tool of an MCP server (a tool not listed is not offered)."""


class McpServerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    url: str = Field(pattern=r"^https?://[^\s]+$", max_length=2048)
    timeout_s: float = Field(10.0, gt=0, le=MAX_TIMEOUT_S)
    headers_from_env: dict[str, str] = {}
    tools: dict[str, McpToolSettings] = {}

    @field_validator("headers_from_env")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        return _checked_headers(value)

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, value: dict[str, McpToolSettings]) -> dict[str, McpToolSettings]:
        for name in value:
            if not re.fullmatch(TOOL_NAME_PATTERN, name):
                raise ValueError(f"{name!r} is not a tool name")
        return value


def checked_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` when it is a valid JSON Schema of an object; ``ValueError`` otherwise."""
    from gateway.tools.arguments import schema_problem

    problem = schema_problem(schema)
    if problem is not None:
        raise ValueError(problem)
    return schema


def _checked_headers(headers: dict[str, str]) -> dict[str, str]:
    for header, variable in headers.items():
        if not re.fullmatch(_HEADER_PATTERN, header):
            raise ValueError(f"{header!r} is not a header name")
        if header.lower() in RESERVED_HEADERS:
            raise ValueError(f"{header!r} is set by the gateway")
        if not re.fullmatch(_ENV_PATTERN, variable):
            raise ValueError(f"{variable!r} is not an environment variable name")
    return headers


def unique_action_names(tools: list[ToolSettings], servers: list[McpServerSettings]) -> list[str]:
    """The names of every action offered through the settings; ``ValueError`` on a name given
    twice (an MCP tool is offered under its own name)."""
    names: list[str] = [tool.name for tool in tools]
    for server in servers:
        names.extend(server.tools)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"the action {name!r} is defined twice")
        seen.add(name)
    return names

"""Tools of MCP servers (streamable HTTP), through the official `mcp` SDK: their listing, kept a
minute per server, and one call.

Every request goes through a client of the safe fetcher (`SafeFetcher.own_client`: each
connection's addresses checked, no redirect followed) carrying the server's secret headers
(`headers_from_env`) and, on a call, the identity assertion: as `X-Relaydesk-Identity` and in
the request's `_meta` (``relaydesk/identity``), so a server reading either learns the customer
from the gateway. A server that cannot be reached lists nothing (its tools are not offered) and
a call that fails is an outcome like any other, told to the model as failed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Final, TypeVar

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from gateway.tools.assertion import HEADER
from gateway.tools.catalog import McpToolListing
from gateway.tools.http_action import ActionOutcome, MissingSecret, endpoint_headers
from gateway.tools.settings import EndpointSettings, McpServerSettings
from outbound.fetcher import SafeFetcher

__all__ = ["META_KEY", "McpActions"]

log = logging.getLogger("relaydesk.tools")

META_KEY: Final = "relaydesk/identity"
LISTING_TTL_S: Final = 60.0

T = TypeVar("T")


class McpActions:
    def __init__(
        self,
        fetcher: SafeFetcher,
        environ: Mapping[str, str],
        *,
        listing_ttl_s: float = LISTING_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetcher = fetcher
        self._environ = environ
        self._ttl_s = listing_ttl_s
        self._clock = clock
        self._listed: dict[str, tuple[float, tuple[McpToolListing, ...]]] = {}

    async def listings(self, servers: Sequence[McpServerSettings]) -> tuple[McpToolListing, ...]:
        """The tools every server lists now (a server listed within the last minute is not
        asked again)."""
        found: list[McpToolListing] = []
        for server in servers:
            found.extend(await self._listing(server))
        return tuple(found)

    async def _listing(self, server: McpServerSettings) -> tuple[McpToolListing, ...]:
        key = f"{server.name} {server.url}"
        kept = self._listed.get(key)
        now = self._clock()
        if kept is not None and now - kept[0] < self._ttl_s:
            return kept[1]

        async def list_tools(session: ClientSession) -> tuple[McpToolListing, ...]:
            tools = (await session.list_tools()).tools
            return tuple(
                McpToolListing(
                    server=server.name,
                    name=tool.name,
                    description=tool.description or tool.name,
                    input_schema_json=json.dumps(tool.inputSchema, sort_keys=True),
                )
                for tool in tools
            )

        try:
            async with asyncio.timeout(server.timeout_s):
                listed = await self._session(server, {}, list_tools)
        except Exception as exc:  # any failure of a remote server: its tools are not offered
            log.warning(
                "MCP server not listed",
                extra={"fields": {"server": server.name, "error": _reason(exc)}},
            )
            listed = ()
        self._listed[key] = (now, listed)
        return listed

    async def call(
        self,
        server: McpServerSettings,
        tool: str,
        arguments: dict[str, Any],
        assertion: str,
    ) -> ActionOutcome:
        started = time.perf_counter()

        def outcome(ok: bool, body: str) -> ActionOutcome:
            elapsed = (time.perf_counter() - started) * 1000
            return ActionOutcome("ok" if ok else "failed", body, elapsed)

        async def call_tool(session: ClientSession) -> CallToolResult:
            return await session.call_tool(
                tool,
                arguments,
                read_timeout_seconds=timedelta(seconds=server.timeout_s),
                meta={META_KEY: assertion},
            )

        try:
            async with asyncio.timeout(server.timeout_s):
                result = await self._session(server, {HEADER: assertion}, call_tool)
        except MissingSecret as exc:
            return outcome(False, f"not called: {exc}")
        except TimeoutError:
            return outcome(False, f"{server.name} did not answer within {server.timeout_s:g} s")
        except Exception as exc:  # the server's fault, whatever it is: told to the model
            return outcome(False, f"{server.name} failed: {_reason(exc)}")
        return outcome(not result.isError, _text(result))

    async def _session(
        self,
        server: McpServerSettings,
        headers: Mapping[str, str],
        use: Callable[[ClientSession], Awaitable[T]],
    ) -> T:
        sent = {**_secrets(server, self._environ), **headers}
        async with (
            self._fetcher.own_client(headers=sent, timeout_s=server.timeout_s) as http,
            streamable_http_client(server.url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await use(session)


def _secrets(server: McpServerSettings, environ: Mapping[str, str]) -> dict[str, str]:
    return endpoint_headers(
        EndpointSettings(url=server.url, headers_from_env=server.headers_from_env), environ
    )


def _text(result: CallToolResult) -> str:
    """The result for the model: its structured content as JSON when it has some, else its
    text parts."""
    if result.structuredContent is not None:
        return json.dumps(result.structuredContent, ensure_ascii=False)
    return "\n".join(part.text for part in result.content if isinstance(part, TextContent))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _reason(exc.exceptions[0])
    return str(exc) or type(exc).__name__

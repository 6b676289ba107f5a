"""An MCP server made with the `mcp` SDK's own FastMCP, served over streamable HTTP by uvicorn
on a local port: a CRM whose tools report the identity they were called with."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from mcp.server.fastmcp import Context, FastMCP


def crm() -> tuple[FastMCP, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    server = FastMCP("crm", stateless_http=True, json_response=True)

    @server.tool(description="The state of one of the customer's tickets.")
    async def lookup_ticket(ticket_id: str, ctx: Context) -> dict[str, Any]:  # type: ignore[type-arg]
        meta = ctx.request_context.meta
        request = ctx.request_context.request
        seen.append(
            {
                "ticket_id": ticket_id,
                "meta": meta.model_dump() if meta is not None else {},
                "header": request.headers.get("x-relaydesk-identity") if request else None,
                "token": request.headers.get("authorization") if request else None,
            }
        )
        return {"ticket_id": ticket_id, "state": "waiting for the warehouse"}

    @server.tool(description="Fails, as a broken backend does.")
    async def broken(ticket_id: str) -> str:
        raise RuntimeError("the CRM database is down")

    @server.tool(description="Deletes everything; never gated by a tenant.")
    async def delete_everything() -> str:
        seen.append({"deleted": True})
        return "gone"

    return server, seen


@asynccontextmanager
async def serving(server: FastMCP) -> AsyncIterator[str]:  # type: ignore[type-arg]
    """``server`` on 127.0.0.1 at a free port; yields its MCP URL."""
    config = uvicorn.Config(
        server.streamable_http_app(), host="127.0.0.1", port=0, log_level="warning", lifespan="on"
    )
    running = uvicorn.Server(config)
    task = asyncio.create_task(running.serve())
    while not running.started:
        await asyncio.sleep(0.01)
    port = running.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        running.should_exit = True
        await task

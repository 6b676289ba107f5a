"""Deadlines that drop a slow client, so a few hundred half-sent requests cannot hold the
gateway's connections (and file descriptors) for ever.

- The request head: aiohttp's keep-alive timer, armed when a connection opens and again after
  each answer, closes the connection when no complete request head has arrived by then; bytes
  trickling in do not rearm it. `RELAYDESK_HEADER_TIMEOUT_S` is given to it
  (`keepalive_timeout_s`), so it is also how long an idle kept-alive connection stays open.
  While a handler runs the timer closes nothing, so a web chat socket or an event stream is
  never cut by it.
- The request body: `body_deadline_middleware` gives a request whose body is still arriving
  `RELAYDESK_BODY_TIMEOUT_S` from the end of its head; then the handler's read fails
  (`RequestTimeout`, 408) and the connection is closed. A request without a body (a websocket
  upgrade, an event stream's GET) or whose body has fully arrived has nothing to wait for.
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web
from aiohttp.typedefs import Handler

from gateway.config import Settings
from gateway.http.errors import RequestTimeout
from gateway.keys import SETTINGS

log = logging.getLogger("relaydesk.http")


def keepalive_timeout_s(settings: Settings) -> float:
    """The `keepalive_timeout` the server runs with: the request head's deadline."""
    return settings.header_timeout_s


@web.middleware
async def body_deadline_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not request.body_exists or request.content.is_eof():
        return await handler(request)
    timeout_s = request.app[SETTINGS].body_timeout_s
    timer = asyncio.get_running_loop().call_later(timeout_s, _drop_unfinished, request, timeout_s)
    try:
        return await handler(request)
    finally:
        timer.cancel()


def _drop_unfinished(request: web.Request, timeout_s: float) -> None:
    if request.content.is_eof():
        return  # all of it arrived; the handler just has not read it yet
    # The handler's read fails with a 408 of its own (counted by the metrics), not with a
    # lost connection logged as an unhandled error; the closed connection frees the socket.
    request.content.set_exception(
        RequestTimeout(f"the request body did not arrive within {timeout_s:g} s")
    )
    if request.transport is not None:
        request.transport.close()
    log.info("slow request body dropped", extra={"fields": {"path": request.path}})

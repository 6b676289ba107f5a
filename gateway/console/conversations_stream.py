"""`GET /console/conversations/stream`: server-sent events that tell a console page its
conversations changed, so it reads them again without a reload.

Every gateway process answers it alike: the stream looks at the conversations table once a
`POLL_S` (one aggregate query), so a change written by any process (a message stored by the
background process, another operator taking a conversation) reaches every open page. An
event carries no customer data, only "changed"; the page reads the conversations through the
operator API, under the same login. A comment line every `KEEPALIVE_S` keeps proxies from
closing an idle stream; the app's shutdown ends every stream at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from aiohttp import web

from gateway.keys import SESSIONS
from gateway.storage.repositories.console_conversations import change_mark

log = logging.getLogger("relaydesk.console")

POLL_S = 1.0
KEEPALIVE_S = 15.0


class OpenStreams:
    """The open streams, each with the event that ends it when the app shuts down."""

    def __init__(self) -> None:
        self.stops: set[asyncio.Event] = set()


STREAMS = web.AppKey("console_streams", OpenStreams)


async def stream_changes(request: web.Request) -> web.StreamResponse:
    stop = asyncio.Event()
    streams = request.app[STREAMS].stops
    streams.add(stop)
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-store",
            "X-Accel-Buffering": "no",  # a buffering proxy would hold the events back
        }
    )
    try:
        await response.prepare(request)
        await response.write(b"retry: 2000\n\n")
        mark: str | None = None
        quiet_since = time.monotonic()
        while not stop.is_set():
            async with request.app[SESSIONS]() as session:
                now = await change_mark(session)
            if now != mark:
                mark = now
                await response.write(b"event: changed\ndata: {}\n\n")
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= KEEPALIVE_S:
                await response.write(b": keep-alive\n\n")
                quiet_since = time.monotonic()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), POLL_S)
    except (ConnectionResetError, ConnectionError):
        pass  # the page went away
    finally:
        streams.discard(stop)
    return response


async def _end_streams(app: web.Application) -> None:
    for stop in list(app[STREAMS].stops):
        stop.set()


def add_routes(app: web.Application) -> None:
    """Only through `gateway.console.routes.add_routes`, which wraps the handler in the login
    check."""
    app[STREAMS] = OpenStreams()
    app.on_shutdown.append(_end_streams)

"""One access line per request, at INFO on `relaydesk.access`.

The line names the method, the matched route's pattern (never the raw path: ids stay out of
the log and lines group by route), the status, the duration, the request id and the client
address as the trusted-proxy rule sees it (`gateway.http.client_address`). aiohttp's own
access log stays off (`access_log=None`): it prints full query strings.

The request id is the caller's `X-Request-Id` when it is a short plain token (a proxy in
front may set one), otherwise a new one; either way it is answered in `X-Request-Id` and
carried by the request's refusal line (`gateway.http.refusals`), so the two can be joined.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Handler

from gateway.http.client_address import client_of
from gateway.http.refusals import REQUEST_ID, route_of

ACCESS_LOGGER = "relaydesk.access"
log = logging.getLogger(ACCESS_LOGGER)

HEADER: Final = "X-Request-Id"
_PLAIN_ID: Final = re.compile(r"[A-Za-z0-9._:-]{1,64}")
# What the line says when the client went away before an answer (nginx's convention).
CLIENT_CLOSED: Final = 499


def request_id_from(given: str | None) -> str:
    """The caller's id when it is a short plain token (nothing a log line could be forged
    with), else a new one."""
    if given is not None and _PLAIN_ID.fullmatch(given):
        return given
    return uuid.uuid4().hex


@web.middleware
async def access_log_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    request_id = request_id_from(request.headers.get(HEADER))
    request[REQUEST_ID] = request_id
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        if not response.prepared:  # a websocket or a stream has sent its headers already
            response.headers[HEADER] = request_id
        return response
    except web.HTTPException as exc:  # a redirect, or an error no middleware answered
        status = exc.status
        exc.headers[HEADER] = request_id
        raise
    except asyncio.CancelledError:
        status = CLIENT_CLOSED
        raise
    finally:
        log.info(
            "request",
            extra={
                "fields": {
                    "method": request.method,
                    "route": route_of(request),
                    "status": status,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                    "request_id": request_id,
                    "client": client_of(request).address,
                }
            },
        )

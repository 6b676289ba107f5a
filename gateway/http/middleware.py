"""The error middleware (every failure becomes `{"error", "detail"}` JSON) and request metrics."""

from __future__ import annotations

import asyncio
import logging
import time

from aiohttp import web
from aiohttp.typedefs import Handler

from channels.base import PayloadInvalid, SignatureInvalid
from context import BudgetError
from gateway.http.errors import GatewayError, PayloadTooLarge, TooManyRequests
from gateway.keys import METRICS, SETTINGS
from gateway.runtime.outages import is_database_timeout, is_storage_down
from gateway.storage.errors import (
    CustomerScopeRequired,
    DuplicateMessage,
    IdentityRace,
    RecordNotFound,
)
from gateway.tenants import TenantConfigError
from identity import IdentityConfigError, OwnershipConflict

log = logging.getLogger("relaydesk.http")

HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "unprocessable",
}


def error_response(status: int, code: str, detail: str) -> web.Response:
    return web.json_response({"error": code, "detail": detail}, status=status)


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except TooManyRequests as exc:
        response = error_response(exc.status, exc.code, exc.detail)
        response.headers["Retry-After"] = str(exc.retry_after_s)
        return response
    except GatewayError as exc:
        return error_response(exc.status, exc.code, exc.detail)
    except SignatureInvalid as exc:
        return error_response(exc.status, "invalid_signature", str(exc))
    except PayloadInvalid as exc:
        return error_response(400, "invalid_payload", str(exc))
    except RecordNotFound as exc:
        return error_response(404, "not_found", str(exc))
    except (OwnershipConflict, DuplicateMessage, IdentityRace) as exc:
        return error_response(409, "conflict", str(exc))
    except BudgetError as exc:
        return error_response(422, exc.code, exc.detail)
    except (TenantConfigError, IdentityConfigError) as exc:
        return error_response(422, "invalid_tenant_settings", str(exc))
    except CustomerScopeRequired as exc:
        return error_response(400, "customer_required", str(exc))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = HTTP_CODES.get(exc.status, "http_error")
        detail = exc.text if exc.status == 413 and exc.text else exc.reason
        response = error_response(exc.status, code, detail)
        if "Allow" in exc.headers:  # a 405 names the methods the route takes (RFC 9110)
            response.headers["Allow"] = exc.headers["Allow"]
        return response
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if is_database_timeout(exc):
            log.warning("database timeout", extra={"fields": {"path": request.path}})
            return error_response(
                503, "database_timeout", "the database did not answer in time; retry later"
            )
        if is_storage_down(exc):
            log.warning("storage unavailable", extra={"fields": {"error": type(exc).__name__}})
            return error_response(503, "storage_unavailable", "storage is unavailable; retry later")
        log.exception("unhandled error", extra={"fields": {"path": request.path}})
        return error_response(500, "internal_error", "internal error")


@web.middleware
async def body_limit_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse a declared oversized body before reading it; aiohttp's own limit covers
    chunked bodies when the handler reads them."""
    limit = request.app[SETTINGS].max_body_bytes
    if request.content_length is not None and request.content_length > limit:
        raise PayloadTooLarge(f"body of {request.content_length} bytes exceeds {limit} bytes")
    return await handler(request)


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    metrics = request.app[METRICS]
    route = request.match_info.route.resource
    name = route.canonical if route is not None else "unmatched"
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    finally:
        metrics.requests.labels(request.method, name, str(status)).inc()
        metrics.latency.labels(name).observe(time.perf_counter() - started)

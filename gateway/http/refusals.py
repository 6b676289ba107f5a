"""Why a request was refused, by a stable name, logged at INFO where HTTP answers it.

Adapters and handlers only raise (`channels.base.SignatureInvalid` with its `reason`,
`PayloadInvalid`, the `gateway.http.errors` tree); `refusal_of` names the reason of an error
(pure), and `log_refusal` writes one `request refused` line on the `relaydesk.refusals`
logger with the reason, the detail, the route, the request id and the client. The line never
carries a secret, a token or a body: only the error's own detail (which names a header, never
its value) and, for a Twilio signature, the URL it was computed over.

The reasons (documented for operators in docs/logs.md):

    signature_mismatch      a provider signature missing or not matching (Twilio: with the
                            URL it was computed over; Meta: X-Hub-Signature-256)
    bad_secret              Telegram's secret token missing or not matching
    bad_verify_token        Meta's subscription check with another verify token
    channel_not_configured  the secret to check a provider's request is not set
    malformed               a body, form or query that cannot be read
    bad_frame               a web chat websocket frame that cannot be read (binary, too big,
                            not JSON, an unknown type)
    too_large               a body past RELAYDESK_MAX_BODY_BYTES (413)
    unsupported_media_type  a body in another format than the route reads (415)
    body_timeout            a body that did not arrive in time (408)
    invalid_visitor_id      a web chat visitor id this server did not sign
    unauthorized            a missing or wrong API key, metrics token or console login
    forbidden, csrf_failed, identity_required, identity_mismatch   …and other 401/403 codes
    rate_limited            past a rate limit (429), the login throttle included
    <code>                  any other 4xx refusal: its error code (e.g. reason_required)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Handler

from channels.base import PayloadInvalid, SignatureInvalid
from gateway.http.client_address import client_of
from gateway.http.errors import GatewayError

log = logging.getLogger("relaydesk.refusals")

REQUEST_ID: Final = web.RequestKey("request_id", str)

# Statuses that refuse the request itself: a 404, a 409 or a 5xx is an answer, not a refusal.
REFUSAL_STATUSES: Final = frozenset({400, 401, 403, 408, 413, 415, 422, 429})

# Error codes whose reason is a broader stable name.
_REASON_OF_CODE: Final = {
    "payload_too_large": "too_large",
    "request_timeout": "body_timeout",
    "too_many_requests": "rate_limited",
    "malformed_json": "malformed",
    "invalid_body": "malformed",
    "invalid_text": "malformed",
    "invalid_query": "malformed",
    "invalid_cursor": "malformed",
    "invalid_payload": "malformed",
    "invalid_transcript": "malformed",
}
_REASON_OF_STATUS: Final = {
    400: "malformed",
    401: "unauthorized",
    403: "forbidden",
    408: "body_timeout",
    413: "too_large",
    415: "unsupported_media_type",
    422: "unprocessable",
    429: "rate_limited",
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """A refused request's reason (a stable name), the error's detail, and for a provider
    signature the URL it was computed over."""

    reason: str
    detail: str
    signed_url: str | None = None


def reason_of_code(code: str) -> str:
    return _REASON_OF_CODE.get(code, code)


def refusal_of(error: BaseException) -> Refusal | None:
    """The refusal an error stands for, or None when it is not one (pure)."""
    if isinstance(error, SignatureInvalid):
        return Refusal(error.reason, str(error), error.signed_url)
    if isinstance(error, PayloadInvalid):
        return Refusal(PayloadInvalid.reason, str(error))
    if isinstance(error, GatewayError):
        if error.status not in REFUSAL_STATUSES:
            return None
        return Refusal(reason_of_code(error.code), error.detail)
    if isinstance(error, web.HTTPException) and error.status in REFUSAL_STATUSES:
        detail = error.text if error.status == 413 and error.text else error.reason
        return Refusal(_REASON_OF_STATUS[error.status], detail)
    return None


def request_id_of(request: web.Request) -> str | None:
    return request.get(REQUEST_ID)


def route_of(request: web.Request) -> str:
    """The matched route's pattern (`/v1/customers/{customer_id}`), never the raw path."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else "unmatched"


def log_refusal(request: web.Request, refusal: Refusal, **fields: str | int) -> None:
    """One INFO line for a refused request (`fields`: what else the refusal names, e.g. the
    websocket frame's kind)."""
    line: dict[str, str | int | None] = {
        "reason": refusal.reason,
        "detail": refusal.detail,
        "method": request.method,
        "route": route_of(request),
        "request_id": request_id_of(request),
        "client": client_of(request).address,
        **fields,
    }
    if refusal.signed_url is not None:
        line["signed_url"] = refusal.signed_url
    log.info("request refused", extra={"fields": line})


@web.middleware
async def refusal_log_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Log the reason of every refusal raised below it; the error middleware above answers."""
    try:
        return await handler(request)
    except Exception as error:
        refusal = refusal_of(error)
        if refusal is not None:
            log_refusal(request, refusal)
        raise

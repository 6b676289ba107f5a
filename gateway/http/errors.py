"""The errors that carry an HTTP answer: a status, a stable error code and a human detail.

`gateway.http.middleware.error_middleware` turns every one into `{"error": code, "detail":
detail}` with its status (a 429 adds `Retry-After`); the console's page wrapper shows the same
status and detail as an HTML page. Handlers, `gateway.operators` and `gateway.customers` raise
them; `code` overrides the class's default where a client needs the finer reason (e.g.
`BadRequest(..., code="reason_required")`). This module imports nothing, so any layer may
raise from it.

GatewayError                      status, code, detail
├── BadRequest                    400 bad_request: malformed input, a missing reason, an
│                                     unconfirmed erasure, an unchanged value...
├── Unauthorized                  401 unauthorized: missing or wrong credentials
├── Forbidden                     403 forbidden: a signature, secret or CSRF token that does
│                                     not match
├── NotFound                      404 not_found
├── RequestTimeout                408 request_timeout: the body did not arrive in time (the
│                                     connection is dropped too)
├── Conflict                      409 conflict
├── PayloadTooLarge               413 payload_too_large
├── UnsupportedMediaType          415 unsupported_media_type: a body in another format than the
│                                     route reads (a JSON body on a form webhook)
├── Unprocessable                 422 unprocessable: well-formed but unusable (e.g. a fixed
│                                     context too big)
├── TooManyRequests               429 too_many_requests: try again after `retry_after_s`
└── ServiceUnavailable            503 service_unavailable: a dependency is down; retry

Other packages keep their own roots and know nothing of HTTP; the middleware maps the ones a
request can meet: `channels.base.SignatureInvalid` / `PayloadInvalid`, the storage layer's
`RecordNotFound` (404), `DuplicateMessage` / `IdentityRace` and `identity.OwnershipConflict`
(409), `context.BudgetError` and invalid tenant settings (422), `CustomerScopeRequired` (400).
"""

from __future__ import annotations


class GatewayError(Exception):
    status = 500
    code = "internal_error"

    def __init__(self, detail: str, *, code: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        if code is not None:
            self.code = code


class BadRequest(GatewayError):
    status = 400
    code = "bad_request"


class Unauthorized(GatewayError):
    status = 401
    code = "unauthorized"


class Forbidden(GatewayError):
    status = 403
    code = "forbidden"


class NotFound(GatewayError):
    status = 404
    code = "not_found"


class RequestTimeout(GatewayError):
    status = 408
    code = "request_timeout"


class Conflict(GatewayError):
    status = 409
    code = "conflict"


class PayloadTooLarge(GatewayError):
    status = 413
    code = "payload_too_large"


class UnsupportedMediaType(GatewayError):
    status = 415
    code = "unsupported_media_type"


class Unprocessable(GatewayError):
    status = 422
    code = "unprocessable"


class TooManyRequests(GatewayError):
    status = 429
    code = "too_many_requests"

    def __init__(self, detail: str, *, retry_after_s: int, code: str | None = None) -> None:
        super().__init__(detail, code=code)
        self.retry_after_s = retry_after_s


class ServiceUnavailable(GatewayError):
    status = 503
    code = "service_unavailable"

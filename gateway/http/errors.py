"""The gateway's HTTP-facing errors; one middleware turns them into JSON responses.

GatewayError                      (code, status)
├── BadRequest                    400 malformed input, with a reason
├── Unauthorized                  401 missing or wrong credentials
├── Forbidden                     403 a signature or secret that does not match
├── NotFound                      404
├── Conflict                      409
├── PayloadTooLarge               413
├── Unprocessable                 422 well-formed but unusable (e.g. a fixed context too big)
├── TooManyRequests               429 try again after `retry_after_s` (Retry-After)
└── ServiceUnavailable            503 a dependency is down; providers should retry
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


class Conflict(GatewayError):
    status = 409
    code = "conflict"


class PayloadTooLarge(GatewayError):
    status = 413
    code = "payload_too_large"


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

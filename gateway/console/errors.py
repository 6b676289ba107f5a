"""Why the console's service refuses an operator action.

The service knows nothing of HTTP: the error middleware (JSON API) and the console's page
wrapper (HTML) give these their status. A missing record is the storage layer's
`RecordNotFound`; an ownership clash is the identity rules' `OwnershipConflict`.

ConsoleError
└── Invalid        the action cannot be carried out as asked (400)
"""

from __future__ import annotations


class ConsoleError(Exception):
    """`code` is the stable machine-readable reason clients see; `detail` the human one."""

    code = "console_error"

    def __init__(self, detail: str, *, code: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        if code is not None:
            self.code = code


class Invalid(ConsoleError):
    """A missing reason, an empty or unchanged value, a fact no longer in force..."""

    code = "bad_request"  # when the refusal has no finer name

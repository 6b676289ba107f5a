"""Why a fetch gave nothing: one root, three reasons.

FetchError
├── FetchRefused   the URL, an address it resolves to or a redirect is not allowed (never retried)
├── FetchTooLarge  the body is larger than its kind allows (never retried)
└── FetchFailed    no usable answer: unreachable, timed out or a non-2xx status
"""

from __future__ import annotations


class FetchError(Exception):
    """`retryable`: the same fetch may work later."""

    retryable = False


class FetchRefused(FetchError):
    pass


class FetchTooLarge(FetchError):
    pass


class FetchFailed(FetchError):
    def __init__(self, reason: str, *, status: int | None = None, retryable: bool = True) -> None:
        super().__init__(reason)
        self.status = status
        self.retryable = retryable

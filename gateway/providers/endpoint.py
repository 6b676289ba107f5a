"""What the HTTP providers share: one call with their own settings, and the reply read into a
`Completion`.

Each vendor module keeps what differs (payload, where the text and the usage sit); the call
through `post_json` and the checks every reply gets are here once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import httpx

from gateway.providers.base import Completion, ProviderError, Usage
from gateway.providers.retry import JsonReply, RetryPolicy, post_json

__all__ = ["HttpEndpoint", "call", "completion"]


class HttpEndpoint(Protocol):
    """An HTTP provider as `call` sees it: client, address, headers, limits and names."""

    @property
    def name(self) -> str: ...

    @property
    def http(self) -> httpx.AsyncClient: ...

    @property
    def url(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def timeout_s(self) -> float: ...

    @property
    def retry(self) -> RetryPolicy: ...

    def headers(self) -> dict[str, str]: ...


async def call(endpoint: HttpEndpoint, payload: Mapping[str, object]) -> JsonReply:
    """`post_json` of ``payload`` to the endpoint, with its headers, timeout and retry policy."""
    return await post_json(
        endpoint.http,
        endpoint.url,
        payload=payload,
        headers=endpoint.headers(),
        timeout_s=endpoint.timeout_s,
        policy=endpoint.retry,
        provider=endpoint.name,
        model=endpoint.model,
    )


def completion(
    reply: JsonReply,
    *,
    provider: str,
    requested_model: str,
    text: object,
    usage: Usage,
    stop_field: str,
    stop: object,
) -> Completion:
    """The `Completion` of a 2xx reply whose answer is ``text``.

    A ``text`` that is not a string with something in it raises `ProviderError`
    (``invalid_response``), naming the vendor's stop reason ``stop`` as ``stop_field``. The
    model is the one the reply names, else ``requested_model``.
    """
    if not isinstance(text, str) or not text.strip():
        raise ProviderError(
            provider=provider,
            model=requested_model,
            reason="invalid_response",
            attempts=reply.attempts,
            status=200,
            detail=f"no text in the reply ({stop_field}={stop!r})",
        )
    answered_by = reply.field("model")
    return Completion(
        text=text,
        model=answered_by if isinstance(answered_by, str) and answered_by else requested_model,
        provider=provider,
        usage=usage,
        attempts=reply.attempts,
        finish_reason=stop if isinstance(stop, str) else None,
    )

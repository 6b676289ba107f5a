"""What the HTTP providers share: one call with their own settings (plain or streamed), and the
reply read into a `Completion`.

Each vendor module keeps what differs (payload, where the text and the usage sit, how its
stream's events read); the calls through `post_json` and `post_stream` and the checks every
reply gets are here once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

import httpx

from gateway.providers.base import Completion, OnText, ProviderError, Usage
from gateway.providers.listener import TextListener
from gateway.providers.retry import JsonReply, ProviderRequest, RetryPolicy, Target, post_json
from gateway.providers.streaming import StreamedReply, StreamParser, post_stream
from gateway.providers.tool_calls import ToolCall

__all__ = ["HttpEndpoint", "call", "completion", "stream", "streamed_completion"]

P = TypeVar("P", bound=StreamParser)


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


def _request(endpoint: HttpEndpoint, payload: Mapping[str, object]) -> ProviderRequest:
    """``payload`` to the endpoint, with its headers, timeout, retry policy and names."""
    return ProviderRequest(
        http=endpoint.http,
        url=endpoint.url,
        payload=payload,
        headers=endpoint.headers(),
        timeout_s=endpoint.timeout_s,
        policy=endpoint.retry,
        target=Target(endpoint.name, endpoint.model),
    )


async def call(endpoint: HttpEndpoint, payload: Mapping[str, object]) -> JsonReply:
    """`post_json` of ``payload`` to the endpoint, with its headers, timeout and retry policy."""
    return await post_json(_request(endpoint, payload))


async def stream(
    endpoint: HttpEndpoint,
    payload: Mapping[str, object],
    parser: Callable[[], P],
    on_text: OnText,
) -> StreamedReply[P]:
    """`post_stream` of ``payload`` (which asks for a stream) to the endpoint, each attempt read
    by a fresh ``parser()``, the text so far told to ``on_text``."""
    return await post_stream(
        _request(endpoint, payload),
        parser=parser,
        listener=TextListener(on_text, provider=endpoint.name, model=endpoint.model),
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
    tool_calls: tuple[ToolCall, ...] = (),
) -> Completion:
    """The `Completion` of a 2xx reply whose answer is ``text`` (or ``tool_calls``).

    A reply with no calls whose ``text`` is not a string with something in it raises
    `ProviderError` (``invalid_response``), naming the vendor's stop reason ``stop`` as
    ``stop_field``. The model is the one the reply names, else ``requested_model``.
    """
    return _checked(
        provider=provider,
        requested_model=requested_model,
        answered_by=reply.field("model"),
        attempts=reply.attempts,
        text=text,
        usage=usage,
        stop_field=stop_field,
        stop=stop,
        tool_calls=tool_calls,
    )


async def streamed_completion(
    reply: StreamedReply[P],
    *,
    provider: str,
    requested_model: str,
    stop_field: str,
    parse_whole: Callable[[JsonReply], Completion],
    on_text: OnText,
) -> Completion:
    """The `Completion` of a stream read to its end, with the same checks as `completion`; a
    server that answered in one JSON body instead is read by ``parse_whole`` and its text told
    to ``on_text`` once."""
    if reply.whole is not None:
        done = parse_whole(reply.whole)
        await TextListener(on_text, provider=provider, model=requested_model)(done.text)
        return done
    return _checked(
        provider=provider,
        requested_model=requested_model,
        answered_by=reply.parser.model,
        attempts=reply.attempts,
        text=reply.text,
        usage=reply.parser.usage(),
        stop_field=stop_field,
        stop=reply.parser.stop,
        tool_calls=reply.parser.calls(),
    )


def _checked(
    *,
    provider: str,
    requested_model: str,
    answered_by: object,
    attempts: int,
    text: object,
    usage: Usage,
    stop_field: str,
    stop: object,
    tool_calls: tuple[ToolCall, ...] = (),
) -> Completion:
    if tool_calls and (text is None or isinstance(text, str)):
        said = text or ""
    elif isinstance(text, str) and text.strip():
        said = text
    else:
        raise ProviderError(
            provider=provider,
            model=requested_model,
            reason="invalid_response",
            attempts=attempts,
            status=200,
            detail=f"no text in the reply ({stop_field}={stop!r})",
        )
    return Completion(
        text=said,
        model=answered_by if isinstance(answered_by, str) and answered_by else requested_model,
        provider=provider,
        usage=usage,
        attempts=attempts,
        finish_reason=stop if isinstance(stop, str) else None,
        tool_calls=tool_calls,
    )

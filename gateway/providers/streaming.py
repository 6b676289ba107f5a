"""The retrying streamed POST every HTTP provider goes through when the caller wants the text as
it grows.

The body is read as server-sent events with httpx-sse; what an event means is the vendor's
`StreamParser` (one per attempt), what is shared is here: the text accumulated and passed on
to the caller's `TextListener`, the end-of-stream check, and failures mapped onto the retry
loop of ``retry.py``. A stream is a whole reply only when the vendor's end marker was read; a
dropped connection, an early end, an unreadable event or a silent gap fails that attempt, and a
retry starts the text again from empty. A server that ignores the stream flag and answers
with one JSON body (some OpenAI-compatible servers do) is not a failure: its body is returned as
`StreamedReply.whole` for the vendor's plain parser.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import httpx
from httpx_sse import EventSource, ServerSentEvent, SSEError

from gateway.providers.base import FailureReason, ProviderError, Usage
from gateway.providers.listener import TextListener
from gateway.providers.retry import (
    JsonReply,
    ProviderRequest,
    RetryableFailure,
    Target,
    one_line,
    raise_for_status,
    request_failure,
    with_retries,
)
from gateway.providers.tool_calls import ToolCall

__all__ = [
    "StreamFault",
    "StreamParser",
    "StreamedReply",
    "event_json",
    "post_stream",
]


class StreamFault(Exception):
    """An event that makes the attempt fail: an error event, or data that cannot be read."""

    def __init__(self, reason: FailureReason, detail: str, *, retryable: bool = True) -> None:
        super().__init__(detail)
        self.reason: FailureReason = reason
        self.detail = detail
        self.retryable = retryable


class StreamParser(Protocol):
    """One attempt's reading of a vendor's event stream; a fresh one for every attempt."""

    @property
    def done(self) -> bool:
        """The end marker was read: nothing more to wait for."""
        ...

    @property
    def complete(self) -> bool:
        """The body may end here and the reply still be whole."""
        ...

    @property
    def model(self) -> str | None:
        """The model the stream named, if it did."""
        ...

    @property
    def stop(self) -> str | None:
        """The vendor's stop reason, once read."""
        ...

    def feed(self, event: ServerSentEvent) -> str:
        """The text this event adds (empty for none); raises `StreamFault`."""
        ...

    def usage(self) -> Usage: ...

    def calls(self) -> tuple[ToolCall, ...]:
        """The tool calls the stream carried, put together (`tool_calls.CallPieces`)."""
        ...


P = TypeVar("P", bound=StreamParser)


@dataclass(frozen=True, slots=True)
class StreamedReply(Generic[P]):
    """A stream read to its end marker: the whole text, the calls it took, what was parsed;
    or, from a server that answered in one JSON body instead, that body (``whole``)."""

    text: str
    attempts: int
    parser: P
    whole: JsonReply | None = None


def event_json(event: ServerSentEvent) -> Mapping[str, object]:
    """The event's data as a JSON object; anything else is a broken stream."""
    try:
        data: object = json.loads(event.data)
    except ValueError as exc:
        raise StreamFault("stream_broken", f"an event is not JSON: {one_line(event.data)}") from exc
    if not isinstance(data, dict):
        raise StreamFault("stream_broken", f"an event is not a JSON object: {one_line(event.data)}")
    return data


def _stream_headers(headers: Mapping[str, str]) -> dict[str, str]:
    kept = {name: value for name, value in headers.items() if name.lower() != "accept"}
    return {**kept, "accept": "text/event-stream"}


async def post_stream(
    request: ProviderRequest, *, parser: Callable[[], P], listener: TextListener
) -> StreamedReply[P]:
    """POST the request's payload (which asks for a stream) and read the event stream to its
    end, each attempt by a fresh ``parser()``, telling ``listener`` the text so far after every
    piece; retried from the start under the request's policy.

    ``timeout_s`` bounds the wait for the answer and for its first event, then every gap
    between two events — not the whole attempt as `post_json` does, since a long reply takes
    long to stream while a stalled one goes quiet. The time spent in ``listener`` is the
    caller's, not the vendor's, and is not counted. Raises `ProviderError` when the attempts are
    used up or the failure is final; never returns a partial text.
    """
    target, timeout_s = request.target, request.timeout_s
    loop = asyncio.get_running_loop()

    async def attempt(number: int) -> StreamedReply[P]:
        reading = parser()
        text = ""
        status: int | None = None  # set once a 2xx answer has begun: the body is the stream
        try:
            async with asyncio.timeout(timeout_s) as deadline:
                async with request.http.stream(
                    "POST",
                    request.url,
                    json=dict(request.payload),
                    headers=_stream_headers(request.headers),
                    timeout=timeout_s,
                ) as response:
                    if not response.is_success:
                        await response.aread()
                        raise_for_status(response, target, number)
                    status = response.status_code
                    if _is_json(response):
                        return StreamedReply("", number, reading, await _whole(response, number))
                    deadline.reschedule(loop.time() + timeout_s)
                    async with aclosing(EventSource(response).aiter_sse()) as events:
                        async for event in events:
                            piece = reading.feed(event)
                            if piece:
                                text += piece
                                deadline.reschedule(None)  # the caller's time, not the vendor's
                                await listener(text)
                            if reading.done:
                                break
                            deadline.reschedule(loop.time() + timeout_s)
        except SSEError as exc:  # a 2xx that is not an event stream (before TransportError)
            raise target.failure("invalid_response", number, status, one_line(str(exc))) from exc
        except StreamFault as fault:
            error = target.failure(fault.reason, number, status, fault.detail)
            raise (RetryableFailure(error) if fault.retryable else error) from fault
        except (httpx.TransportError, httpx.DecodingError, TimeoutError) as exc:
            if status is None:
                raise request_failure(exc, target, number, timeout_s=timeout_s) from exc
            raise RetryableFailure(_broken(exc, target, number, status, timeout_s)) from exc
        if not reading.complete:
            detail = "the stream ended before its end marker"
            raise RetryableFailure(target.failure("stream_broken", number, status, detail))
        return StreamedReply(text=text, attempts=number, parser=reading)

    return await with_retries(attempt, policy=request.policy, target=target)


def _is_json(response: httpx.Response) -> bool:
    content_type: str = response.headers.get("content-type", "")
    return content_type.split(";")[0].strip() == "application/json"


async def _whole(response: httpx.Response, attempt: int) -> JsonReply:
    """The one JSON body of a server that did not stream; read like `post_json` reads it."""
    await response.aread()
    try:
        body: object = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}  # no text in it: the vendor's checks refuse it as an invalid response
    return JsonReply(body=body, attempts=attempt)


def _broken(
    exc: Exception, target: Target, attempt: int, status: int, timeout_s: float
) -> ProviderError:
    """The failure of a stream that had begun: a silent gap, or the connection lost."""
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        error = target.failure("timeout", attempt, status, f"no event within {timeout_s:g} s")
    else:
        detail = f"the connection dropped mid-stream: {one_line(str(exc)) or type(exc).__name__}"
        error = target.failure("stream_broken", attempt, status, detail)
    error.__cause__ = exc
    return error

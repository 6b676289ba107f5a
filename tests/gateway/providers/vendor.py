"""A scripted model vendor on a real local socket: answers each request with the next step of
its script and records what it received (path, headers, JSON body).

A step with ``events`` answers ``text/event-stream``, writing one server-sent event at a time
(chunked, a short sleep between them), then ends the body, goes quiet, or cuts the connection
mid-body. `openai_stream` and `anthropic_stream` build the events the vendors send."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

OPENAI_PATH = "/v1/chat/completions"  # below a base URL ending in /v1
ANTHROPIC_PATH = "/v1/messages"  # below a base URL without it
PIECES = ("Seu pedido", " 4471 saiu", " para entrega hoje.")
"""The pieces a stream sends by default; `WHOLE` the reply they make, the default plain text."""
WHOLE = "".join(PIECES)


@dataclass(frozen=True)
class Step:
    """One scripted answer; ``hang_s`` holds the answer back (released when the test ends)."""

    status: int = 200
    body: object = None
    headers: Mapping[str, str] = field(default_factory=dict)
    hang_s: float = 0.0
    raw: str | None = None  # a non-JSON body
    events: Sequence[str] | None = None  # server-sent events, written one by one
    gap_s: float = 0.005  # the sleep after each event
    stall_s: float = 0.0  # after the events, silence (released when the test ends)
    drop: bool = False  # after the events, cut the connection without ending the body


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: Mapping[str, str]
    body: dict[str, Any]


class ScriptedVendor:
    def __init__(self, path: str, steps: Iterable[Step], *, then: Step) -> None:
        self.path = path
        self.steps = deque(steps)
        self.then = then
        self.received: list[Received] = []
        self.release = asyncio.Event()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(self.path, self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.received.append(
            Received(
                request.method,
                request.path,
                {key.lower(): value for key, value in request.headers.items()},
                body,
            )
        )
        step = self.steps.popleft() if self.steps else self.then
        if step.hang_s:
            try:
                await asyncio.wait_for(self.release.wait(), step.hang_s)
            except TimeoutError:
                pass
        if step.events is not None:
            return await self._stream(request, step)
        if step.raw is not None:
            return web.Response(status=step.status, text=step.raw, headers=dict(step.headers))
        return web.Response(
            status=step.status,
            text=json.dumps(step.body),
            content_type="application/json",
            headers=dict(step.headers),
        )

    async def _stream(self, request: web.Request, step: Step) -> web.StreamResponse:
        assert step.events is not None
        response = web.StreamResponse(
            status=step.status,
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
        )
        response.headers.update(step.headers)
        await response.prepare(request)
        for event in step.events:
            await response.write(event.encode())
            await asyncio.sleep(step.gap_s)
        if step.stall_s:
            try:
                await asyncio.wait_for(self.release.wait(), step.stall_s)
            except TimeoutError:
                pass
        if step.drop:
            assert request.transport is not None
            request.transport.abort()  # no terminating chunk: the body is cut short
            return response
        await response.write_eof()
        return response


def sse(data: object, event: str | None = None) -> str:
    """One server-sent event; ``data`` is sent as it is when a string, else as JSON."""
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {text}\n\n"


def openai_stream(
    pieces: Sequence[str] = PIECES,
    *,
    prompt: int = 2006,
    completion: int = 300,
    cached: int | None = 1920,
    model: str = "gpt-4o-mini-2024-07-18",
    finish: str = "stop",
) -> list[str]:
    """A chat-completions stream as OpenAI sends it with ``include_usage``: a role chunk, one
    chunk per piece, the finish chunk, the usage chunk (no choices), ``[DONE]``."""

    def chunk(choices: list[dict[str, object]], usage: object = None) -> str:
        return sse(
            {
                "id": "chatcmpl-123",
                "object": "chat.completion.chunk",
                "created": 1_767_225_600,
                "model": model,
                "system_fingerprint": "fp_44709d6fcb",
                "choices": choices,
                "usage": usage,
            }
        )

    def choice(delta: dict[str, object], finish_reason: str | None = None) -> dict[str, object]:
        return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}

    reply = openai_reply(prompt=prompt, completion=completion, cached=cached)
    return [
        chunk([choice({"role": "assistant", "content": "", "refusal": None})]),
        *(chunk([choice({"content": piece})]) for piece in pieces),
        chunk([choice({}, finish)]),
        chunk([], reply["usage"]),
        sse("[DONE]"),
    ]


def anthropic_stream(
    pieces: Sequence[str] = PIECES,
    *,
    input_tokens: int = 21,
    output_tokens: int = 45,
    cache_read: int | None = 1800,
    cache_creation: int | None = 0,
    model: str = "claude-sonnet-4-5-20250929",
    stop: str = "end_turn",
) -> list[str]:
    """A Messages stream as Anthropic sends it: start, a text block with a ``ping`` in it, the
    message delta with the stop reason and output tokens, ``message_stop``."""
    message = anthropic_reply(
        "",
        input_tokens=input_tokens,
        output_tokens=1,
        cache_read=cache_read,
        cache_creation=cache_creation,
        model=model,
    )
    message.update(content=[], stop_reason=None)

    def event(kind: str, **fields: object) -> str:
        return sse({"type": kind, **fields}, kind)

    deltas = [
        event("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
        for piece in pieces
    ]
    return [
        event("message_start", message=message),
        event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        event("ping"),
        *deltas,
        event("content_block_stop", index=0),
        event(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        ),
        event("message_stop"),
    ]


def openai_reply(
    text: str = WHOLE,
    *,
    prompt: int = 2006,
    completion: int = 300,
    cached: int | None = 1920,
    model: str = "gpt-4o-mini-2024-07-18",
) -> dict[str, object]:
    usage: dict[str, object] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_767_225_600,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


def openai_error(message: str, kind: str = "invalid_request_error") -> dict[str, object]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def anthropic_reply(
    text: str = WHOLE,
    *,
    input_tokens: int = 21,
    output_tokens: int = 45,
    cache_read: int | None = 1800,
    cache_creation: int | None = 0,
    model: str = "claude-sonnet-4-5-20250929",
) -> dict[str, object]:
    return {
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": cache_creation,
            "cache_read_input_tokens": cache_read,
            "output_tokens": output_tokens,
        },
    }


def anthropic_error(message: str, kind: str = "invalid_request_error") -> dict[str, object]:
    return {"type": "error", "error": {"type": kind, "message": message}}

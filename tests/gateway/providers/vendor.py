"""A scripted model vendor on a real local socket: answers each request with the next step of
its script and records what it received (path, headers, JSON body)."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class Step:
    """One scripted answer; ``hang_s`` holds the answer back (released when the test ends)."""

    status: int = 200
    body: object = None
    headers: Mapping[str, str] = field(default_factory=dict)
    hang_s: float = 0.0
    raw: str | None = None  # a non-JSON body


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
        if step.raw is not None:
            return web.Response(status=step.status, text=step.raw, headers=dict(step.headers))
        return web.Response(
            status=step.status,
            text=json.dumps(step.body),
            content_type="application/json",
            headers=dict(step.headers),
        )


def openai_reply(
    text: str = "Seu pedido 4471 saiu para entrega hoje.",
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
    text: str = "Seu pedido 4471 saiu para entrega hoje.",
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

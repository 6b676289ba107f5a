"""A local server speaking the OpenAI chat-completions protocol, for pipeline tests.

It records every request and answers after an optional delay, so tests can see what the
model was sent, in which order, and how calls overlapped.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Call:
    messages: list[dict[str, str]]
    started: float
    finished: float | None = None
    model: str | None = None  # the model named in the request

    @property
    def last_user_text(self) -> str:
        return next(m["content"] for m in reversed(self.messages) if m["role"] == "user")


@dataclass
class FakeOpenAI:
    """`delay_s`: how long each answer waits at most; `release()` ends every wait at once.
    `status`: answer every call with this HTTP error instead (e.g. 400)."""

    delay_s: float = 0.0
    status: int | None = None
    reply: str | None = None  # a fixed answer instead of "re: <last user message>"
    calls: list[Call] = field(default_factory=list)
    _released: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        self._released.set()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        return app

    async def _complete(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        call = Call(messages=body["messages"], started=time.monotonic(), model=body.get("model"))
        self.calls.append(call)
        if self.delay_s:
            try:
                await asyncio.wait_for(self._released.wait(), self.delay_s)
            except TimeoutError:
                pass
        call.finished = time.monotonic()
        if self.status is not None:
            return web.json_response({"error": {"message": "refused"}}, status=self.status)
        return web.json_response(
            {
                "id": f"chatcmpl-{len(self.calls)}",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": self.reply or f"re: {call.last_user_text}",
                        },
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
            }
        )

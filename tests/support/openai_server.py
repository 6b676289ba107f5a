"""A local server speaking the OpenAI chat-completions protocol, for pipeline tests.

It records every request and answers after an optional delay, so tests can see what the
model was sent, in which order, and how calls overlapped. With ``streaming=True`` a request
asking ``"stream": true`` is answered with server-sent events, the reply's words paced at
``tokens_per_s`` after ``first_token_s``; requests without it still get one JSON answer.
``in_flight`` and ``peak_in_flight`` count the requests being answered (both kinds).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer


@dataclass
class Call:
    messages: list[dict[str, str]]
    started: float
    finished: float | None = None
    model: str | None = None  # the model named in the request
    streamed: bool = False  # answered with server-sent events
    first_token: float | None = None  # when the first piece of text was sent (streamed only)
    tools: list[dict[str, Any]] | None = None  # the actions the request offered
    tool_choice: object = None

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools or ()]

    @property
    def tool_results(self) -> list[dict[str, str]]:
        """The ``tool`` messages the request replayed (results of earlier calls)."""
        return [message for message in self.messages if message["role"] == "tool"]

    @property
    def last_user_text(self) -> str:
        return next(m["content"] for m in reversed(self.messages) if m["role"] == "user")


def _pieces(text: str) -> list[str]:
    """The reply cut into word-sized tokens, each with the spaces before it."""
    return re.findall(r"\s*\S+", text) or [text]


def model_settings(base_url: str) -> dict[str, str]:
    """The settings that point a gateway at the model served at ``base_url``."""
    return {"RELAYDESK_MODEL": "openai:test-model", "RELAYDESK_MODEL_BASE_URL": base_url}


@dataclass
class FakeOpenAI:
    """`delay_s`: how long each answer waits at most; `release()` ends every wait at once.
    `status`: answer every call with this HTTP error instead (e.g. 400).

    `streaming`: answer ``"stream": true`` requests with server-sent events; then
    `first_token_s` is the wait (after the headers, ended by `release()` too) before the first
    token and `tokens_per_s` the pace of the others (0: no pause).

    `reply_for` and `hold_for` tell calls apart by what they were sent (e.g. a memory call from
    a reply): the answer to give instead of the usual one, and an event the answer waits for
    (after `delay_s`); None from either: the usual answer, no wait.

    `tool_calls_for`: the calls (name, arguments as JSON text) the model makes instead of
    answering, as a real model does when it is offered actions; None or empty: it answers.
    Streamed, the calls come as ``delta.tool_calls`` pieces with the arguments in two halves."""

    delay_s: float = 0.0
    status: int | None = None
    reply: str | None = None  # a fixed answer instead of "re: <last user message>"
    calls: list[Call] = field(default_factory=list)
    streaming: bool = False
    first_token_s: float = 0.0
    tokens_per_s: float = 0.0
    break_after_pieces: int | None = None  # end every stream after this many, unfinished
    reply_for: Callable[[Call], str | None] | None = None
    hold_for: Callable[[Call], asyncio.Event | None] | None = None
    tool_calls_for: Callable[[Call], list[tuple[str, str]] | None] | None = None
    in_flight: int = 0  # requests being answered now
    peak_in_flight: int = 0  # the most at once so far
    _released: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        self._released.set()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        return app

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """This model on a local server; yields its base URL (ending in ``/v1``). Answers still
        held back are released before the server closes."""
        server = TestServer(self.app())
        await server.start_server()
        try:
            yield str(server.make_url("/v1"))
        finally:
            self.release()
            await server.close()

    async def _wait(self, seconds: float) -> None:
        if seconds:
            try:
                await asyncio.wait_for(self._released.wait(), seconds)
            except TimeoutError:
                pass

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self._answer(request)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        call = Call(
            messages=body["messages"],
            started=time.monotonic(),
            model=body.get("model"),
            tools=body.get("tools"),
            tool_choice=body.get("tool_choice"),
        )
        self.calls.append(call)
        await self._wait(self.delay_s)
        held = self.hold_for(call) if self.hold_for is not None else None
        if held is not None:
            await held.wait()
        if self.status is not None:
            call.finished = time.monotonic()
            return web.json_response({"error": {"message": "refused"}}, status=self.status)
        asked = self.tool_calls_for(call) if self.tool_calls_for is not None else None
        if asked:
            return await self._call_tools(request, body, call, asked)
        chosen = self.reply_for(call) if self.reply_for is not None else None
        text = chosen if chosen is not None else self.reply or f"re: {call.last_user_text}"
        if self.streaming and body.get("stream") is True:
            call.streamed = True
            response = await self._stream(request, body, call, text)
            call.finished = time.monotonic()
            return response
        call.finished = time.monotonic()
        return web.json_response(
            {
                "id": f"chatcmpl-{len(self.calls)}",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
            }
        )

    async def _call_tools(
        self, request: web.Request, body: dict[str, Any], call: Call, asked: list[tuple[str, str]]
    ) -> web.StreamResponse:
        ids = [f"call_{len(self.calls)}_{index}" for index in range(len(asked))]
        call.finished = time.monotonic()
        if not (self.streaming and body.get("stream") is True):
            calls = [
                {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}
                for id_, (name, args) in zip(ids, asked, strict=True)
            ]
            return web.json_response(
                {
                    "id": f"chatcmpl-{len(self.calls)}",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": None, "tool_calls": calls},
                            "finish_reason": "tool_calls",
                        }
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 9, "total_tokens": 109},
                }
            )
        call.streamed = True
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def send(delta: dict[str, object], finish: str | None = None) -> None:
            chunk = {
                "id": f"chatcmpl-{len(self.calls)}",
                "object": "chat.completion.chunk",
                "model": body["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": None})
        for index, (id_, (name, args)) in enumerate(zip(ids, asked, strict=True)):
            half = len(args) // 2
            first = {"name": name, "arguments": args[:half]}
            await send({"tool_calls": [{"index": index, "id": id_, "function": first}]})
            rest = {"arguments": args[half:]}
            await send({"tool_calls": [{"index": index, "function": rest}]})
        await send({}, "tool_calls")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _stream(
        self, request: web.Request, body: dict[str, Any], call: Call, text: str
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def send(choices: list[dict[str, object]], usage: object = None) -> None:
            chunk = {
                "id": f"chatcmpl-{len(self.calls)}",
                "object": "chat.completion.chunk",
                "model": body["model"],
                "choices": choices,
                "usage": usage,
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send([{"index": 0, "delta": {"role": "assistant", "content": ""}}])
        await self._wait(self.first_token_s)
        pieces = _pieces(text)
        for index, piece in enumerate(pieces):
            if index:
                await asyncio.sleep(1 / self.tokens_per_s if self.tokens_per_s else 0)
            else:
                call.first_token = time.monotonic()
            await send([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
            if self.break_after_pieces is not None and index + 1 >= self.break_after_pieces:
                await response.write_eof()  # no finish_reason, no [DONE]: a broken stream
                return response
        await send([{"index": 0, "delta": {}, "finish_reason": "stop"}])
        if (body.get("stream_options") or {}).get("include_usage"):
            total = 100 + len(pieces)
            usage = {"prompt_tokens": 100, "completion_tokens": len(pieces), "total_tokens": total}
            await send([], usage)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

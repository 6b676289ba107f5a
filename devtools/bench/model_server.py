"""A local OpenAI-compatible model that takes its time, for ``relaydesk bench reply`` under load.

``POST /v1/chat/completions`` answers like a real model served elsewhere: nothing for
``latency_s`` seconds (the queue and the prompt), then the reply. Non-streamed, the JSON body
(with ``usage``) is written once the whole reply would have been generated; with
``"stream": true`` it sends server-sent events, the first token after ``latency_s``, the rest at
``stream_rate`` tokens per second (all at once without a rate), a usage chunk when
``stream_options.include_usage`` asks for it, then ``data: [DONE]``.

With a `ToolPlan` the model calls that action once per turn before it answers
(`devtools.bench.model_tool_calls`): each of the two calls waits ``latency_s`` — the call is
written whole after it, like a short answer.

The server never queues: every request waits only its own latency, so how many a gateway keeps in
flight at once (``in_flight``, ``peak_in_flight``) is the gateway's doing. Each request's arrival
and the moment its first token was written are kept (`ModelRequest`), on the benchmark's own
clock (`time.perf_counter`), so a client in the same process can set them beside its own times.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from devtools.bench.model_tool_calls import (
    ToolPlan,
    failed_result,
    offered_names,
    reference_in,
    tool_call_body,
    tool_call_deltas,
    tool_results,
    wants_call,
)
from devtools.loopback import serving_on_loopback

__all__ = ["REPLY_TOKENS", "ModelRequest", "SlowModel", "ToolPlan"]

COMPLETIONS_PATH = "/v1/chat/completions"
REPLY_TOKENS = 24
# What the model says, cut or repeated to the reply's length; one word is one token.
_WORDS = (
    "Obrigado pela mensagem. Já verifiquei o seu pedido e vou encaminhar ao time de logística "
    "agora mesmo; assim que houver novidade eu aviso por aqui, combinado?"
).split()


@dataclass(slots=True)
class ModelRequest:
    """One chat completion: when it arrived, when its first token was written (the whole body,
    for a non-streamed answer) and when it ended, all on `time.perf_counter`; whether it
    streamed, the last user message it was sent, the actions it offered, the ``tool`` results
    of the turn it carried and whether it was answered with a call."""

    received: float
    streamed: bool
    last_user_text: str
    offered: tuple[str, ...] = ()
    tool_results: tuple[str, ...] = ()
    called: bool = False
    first_token_at: float | None = None
    finished: float | None = None

    @property
    def first_token_s(self) -> float | None:
        """From arrival to the first token written."""
        return None if self.first_token_at is None else self.first_token_at - self.received


@dataclass
class SlowModel:
    """The model server; ``requests`` lists every well-formed request in arrival order."""

    latency_s: float
    stream_rate: float | None = None  # tokens per second after the first; None: all at once
    reply_tokens: int = REPLY_TOKENS
    tool: ToolPlan | None = None  # the action called once per turn, when a request offers it
    requests: list[ModelRequest] = field(default_factory=list)
    in_flight: int = 0
    peak_in_flight: int = 0

    def __post_init__(self) -> None:
        if self.latency_s < 0:
            raise ValueError("the model's latency must not be negative")
        if self.stream_rate is not None and self.stream_rate <= 0:
            raise ValueError("the stream rate must be positive tokens per second")
        if self.reply_tokens < 1:
            raise ValueError("a reply needs at least one token")

    def reset(self) -> None:
        """Forget the requests so far and start the peak again from those in flight now."""
        self.requests = []
        self.peak_in_flight = self.in_flight

    @property
    def calls_made(self) -> int:
        """Requests answered with a call of the action."""
        return sum(request.called for request in self.requests)

    @property
    def answers_after_results(self) -> int:
        """Requests answered in words after a ``tool`` result of their turn."""
        return sum(bool(r.tool_results) and not r.called for r in self.requests)

    @property
    def failed_results(self) -> int:
        """``tool`` results the gateway sent as a failure (``{"error": ...}``)."""
        return sum(failed_result(result) for r in self.requests for result in r.tool_results)

    def request_quoting(self, reference: str) -> ModelRequest | None:
        """The first request whose last user message holds ``[reference]``."""
        marker = f"[{reference}]"
        return next((r for r in self.requests if marker in r.last_user_text), None)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(COMPLETIONS_PATH, self._complete)
        return app

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """`app` on a free loopback port; yields the base URL (for ``RELAYDESK_MODEL_BASE_URL``,
        ending in ``/v1``)."""
        async with serving_on_loopback(self.app()) as root:
            yield root + "/v1"

    def token_due(self, request: ModelRequest, index: int) -> float:
        """When token ``index`` (0 is the first) is to be written."""
        after_first = 0.0 if self.stream_rate is None else index / self.stream_rate
        return request.received + self.latency_s + after_first

    async def _complete(self, http: web.Request) -> web.StreamResponse:
        received = time.perf_counter()
        try:
            body = await http.json()
            messages = _messages(body)
        except (ValueError, TypeError) as exc:
            return _error(400, f"invalid request: {exc}")
        request = ModelRequest(
            received,
            body.get("stream") is True,
            _last_user_text(messages),
            offered=offered_names(body),
            tool_results=tool_results(messages),
            called=wants_call(self.tool, body, messages),
        )
        self.requests.append(request)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if request.called and self.tool is not None:
                return await self._call(http, request, self.tool, messages, body)
            tokens = _reply_tokens(request.last_user_text, self.reply_tokens)
            usage = _usage(messages, len(tokens))
            model = str(body.get("model") or "slow")
            if request.streamed:
                return await self._stream(http, request, tokens, usage, model, body)
            await _sleep_until(self.token_due(request, len(tokens) - 1))
            answer = web.json_response(_completion(model, "".join(tokens), usage))
            await answer.prepare(http)
            await answer.write_eof()
            request.first_token_at = time.perf_counter()
            return answer
        finally:
            request.finished = time.perf_counter()
            self.in_flight -= 1

    async def _call(
        self,
        http: web.Request,
        request: ModelRequest,
        plan: ToolPlan,
        messages: Sequence[dict[str, Any]],
        body: dict[str, Any],
    ) -> web.StreamResponse:
        """The turn's first answer: one call of the action, after the latency."""
        model = str(body.get("model") or "slow")
        arguments = plan.arguments_json(request.last_user_text)
        usage = _usage(messages, len(arguments.split()))
        await _sleep_until(request.received + self.latency_s)
        if not request.streamed:
            answer = web.json_response(tool_call_body(model, plan, arguments, usage))
            await answer.prepare(http)
            await answer.write_eof()
            request.first_token_at = time.perf_counter()
            return answer
        events = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await events.prepare(http)
        chunk_id = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        for delta, finish in tool_call_deltas(plan, arguments):
            await _send(events, _chunk(chunk_id, model, [_choice(delta, finish)]))
        request.first_token_at = time.perf_counter()
        await _finish_stream(events, chunk_id, model, body, usage)
        return events

    async def _stream(
        self,
        http: web.Request,
        request: ModelRequest,
        tokens: Sequence[str],
        usage: dict[str, int],
        model: str,
        body: dict[str, Any],
    ) -> web.StreamResponse:
        events = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await events.prepare(http)  # the headers at once, as vLLM and OpenAI do
        chunk_id = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        for index, token in enumerate(tokens):
            await _sleep_until(self.token_due(request, index))
            delta = {"role": "assistant", "content": token} if index == 0 else {"content": token}
            await _send(events, _chunk(chunk_id, model, [_choice(delta, None)]))
            if index == 0:
                request.first_token_at = time.perf_counter()
        await _send(events, _chunk(chunk_id, model, [_choice({}, "stop")]))
        await _finish_stream(events, chunk_id, model, body, usage)
        return events


async def _finish_stream(
    events: web.StreamResponse,
    chunk_id: str,
    model: str,
    body: dict[str, Any],
    usage: dict[str, int],
) -> None:
    """The usage chunk when ``stream_options.include_usage`` asks for it, then ``[DONE]``."""
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") is True:
        await _send(events, {**_chunk(chunk_id, model, []), "usage": usage})
    await events.write(b"data: [DONE]\n\n")
    await events.write_eof()


async def _sleep_until(moment: float) -> None:
    delay = moment - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)


async def _send(events: web.StreamResponse, data: dict[str, Any]) -> None:
    await events.write(f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode())


def _messages(body: object) -> list[dict[str, Any]]:
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    if not all(isinstance(m, dict) and _well_formed(m) for m in messages):
        raise ValueError("every message needs a text content (or, the model's, its calls)")
    return messages


def _well_formed(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return True
    # An earlier round's calls: the model's message may hold only them.
    return (
        content is None and message.get("role") == "assistant" and bool(message.get("tool_calls"))
    )


def _last_user_text(messages: Sequence[dict[str, Any]]) -> str:
    return next((str(m["content"]) for m in reversed(messages) if m.get("role") == "user"), "")


def _reply_tokens(last_user_text: str, count: int) -> list[str]:
    """The reply as tokens (a word and its space); it quotes the message's ``[reference]``,
    if any, so that a reply can be told apart when reading a log."""
    reference = reference_in(last_user_text)
    quote = [f"[{reference}]"] if reference else []
    words = (quote + [_WORDS[i % len(_WORDS)] for i in range(count)])[:count]
    return [word + " " for word in words[:-1]] + [words[-1]]


def _usage(messages: Sequence[dict[str, Any]], completion_tokens: int) -> dict[str, int]:
    prompt = sum(len(str(m.get("content") or "").split()) for m in messages)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }


def _choice(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish_reason}


def _chunk(chunk_id: str, model: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
    }


def _completion(model: str, text: str, usage: dict[str, int]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


def _error(status: int, message: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "invalid_request_error"}}, status=status
    )

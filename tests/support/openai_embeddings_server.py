"""A local server speaking the OpenAI embeddings protocol (``POST /v1/embeddings``), for tests
of the embedding providers.

Each input gets a deterministic vector made from its text (`raw_vector`, deliberately not of
length 1, so a test sees the provider normalize it). Scripted `Fault` answers go first, one
per request; every request is recorded with its headers. ``reverse`` answers ``data`` in the
opposite order (the ``index`` fields still right), as a server may; ``delay_s`` holds each
answer back, and ``peak_in_flight`` counts how many requests overlapped.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

EMBEDDINGS_PATH = "/v1/embeddings"  # below a base URL ending in /v1


def raw_vector(text: str, dimension: int) -> list[float]:
    """The server's vector for ``text``: numbers in [-4, 4) from the text's SHA-256."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] + i) % 256 / 32.0 - 4.0 for i in range(dimension)]


@dataclass(frozen=True)
class Fault:
    """One scripted answer instead of the vectors: a status with a JSON body and headers."""

    status: int
    body: object = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EmbeddingsRequest:
    headers: Mapping[str, str]
    body: dict[str, Any]
    query: Mapping[str, str]

    @property
    def inputs(self) -> list[str]:
        listed: list[str] = self.body["input"]
        return listed


@dataclass
class FakeEmbeddings:
    """``answer`` replaces the body of a normal answer (given the inputs), for malformed ones."""

    dimension: int = 8
    faults: deque[Fault] = field(default_factory=deque)
    reverse: bool = False
    delay_s: float = 0.0
    answer: Callable[[list[str]], object] | None = None
    requests: list[EmbeddingsRequest] = field(default_factory=list)
    in_flight: int = 0
    peak_in_flight: int = 0

    def app(self, path: str = EMBEDDINGS_PATH) -> web.Application:
        app = web.Application()
        app.router.add_post(path, self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.Response:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self._answer(request)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        self.requests.append(
            EmbeddingsRequest(
                {key.lower(): value for key, value in request.headers.items()},
                body,
                dict(request.query),
            )
        )
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.faults:
            fault = self.faults.popleft()
            return web.Response(
                status=fault.status,
                text=json.dumps(fault.body),
                content_type="application/json",
                headers=dict(fault.headers),
            )
        inputs: list[str] = body["input"]
        if self.answer is not None:
            return web.json_response(self.answer(inputs))
        data = [
            {"object": "embedding", "index": index, "embedding": raw_vector(text, self.dimension)}
            for index, text in enumerate(inputs)
        ]
        if self.reverse:
            data.reverse()
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
            }
        )

"""Web chat visitors for ``relaydesk bench reply --webchat K``: the time from sending a message
to the first streamed piece of its reply, beside the model server's own first-token time.

Each visitor opens the gateway's websocket (``hello`` → ``ready``, protocol in
``gateway/webchat/routes.py``); once all are connected they send one message each at the same
moment. While a reply streams the gateway sends ``{"type": "partial", "reply_to":
<client_message_id>, "text": <reply so far>}`` frames; the stored reply then comes as a
``{"type": "message", "role": "assistant", ...}`` frame. A gateway that does not stream sends
only the latter: then the time to it is what a visitor waits for the first word.

The visitors and the model server run in this process, on one clock, so each visitor's wait
can be set beside the server's time from receiving that very request (found by the reference
the message starts with) to writing its first token.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
from redis.asyncio import Redis

from devtools.bench.model_server import SlowModel

CONNECT_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Visit:
    """One visitor's message: when it was sent, its first partial frame and its final reply
    frame arrived (None: never), on `time.perf_counter`."""

    reference: str  # the client_message_id, quoted at the start of the text
    sent: float
    first_partial: float | None
    final: float | None


@dataclass(frozen=True, slots=True)
class WebchatRounds:
    """The first round of visitors a gateway ever accepts on web chat (its processes compile
    and prepare the statements of that path then), and the next round of new visitors, the
    figure of a gateway that has been serving web chat."""

    first: WebchatResult
    measured: WebchatResult

    def line(self) -> str:
        return (
            f"{self.measured.line()} (the gateway's first round of web chat visitors: "
            f"{self.first.difference_ms:.1f} ms)"
        )

    def figures(self) -> dict[str, object]:
        return {**self.measured.figures(), "first_round": self.first.figures()}


@dataclass(frozen=True, slots=True)
class WebchatResult:
    visitors: int
    answered: int
    streamed: bool  # every answered visitor saw a partial frame before the reply
    client_ms: float  # median: send -> first partial (streamed) or final reply frame
    server_first_token_ms: float  # median: the model server's request -> first token

    @property
    def difference_ms(self) -> float:
        return self.client_ms - self.server_first_token_ms

    def figures(self) -> dict[str, float | int | bool]:
        return {
            "visitors": self.visitors,
            "answered": self.answered,
            "streamed": self.streamed,
            "client_ms": round(self.client_ms, 2),
            "server_first_token_ms": round(self.server_first_token_ms, 2),
            "difference_ms": round(self.difference_ms, 2),
        }

    def line(self) -> str:
        if self.streamed:
            what = "time to the first streamed token"
        else:
            what = "not streamed: time to the final reply frame"
        return (
            f"web chat, {self.visitors} visitors sending at once ({self.answered} answered), "
            f"{what}: median {self.client_ms:.1f} ms at the client, model server's first token "
            f"{self.server_first_token_ms:.1f} ms after the request, difference "
            f"{self.difference_ms:.1f} ms"
        )


async def visit_twice(
    gateway_url: str, count: int, run: str, model: SlowModel, timeout_s: float
) -> WebchatRounds:
    """A first round of ``count`` new visitors, then another: both rounds' figures."""
    first = summarize(await visit(gateway_url, count, f"{run}-first", timeout_s), model)
    measured = summarize(await visit(gateway_url, count, run, timeout_s), model)
    return WebchatRounds(first, measured)


async def issued_visitor(http: aiohttp.ClientSession, gateway_url: str) -> str:
    """A visitor id from the gateway, as the widget gets one (made-up ids are refused)."""
    async with http.post(gateway_url + "/webchat/visitors") as response:
        response.raise_for_status()
        visitor: str = (await response.json())["visitor_id"]
        return visitor


async def visit(gateway_url: str, count: int, run: str, timeout_s: float) -> list[Visit]:
    """``count`` visitors connect, then each sends one message; their timings."""
    ws_url = gateway_url.replace("http://", "ws://", 1) + "/webchat/ws"
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        sockets = [await http.ws_connect(ws_url) for _ in range(count)]
        try:
            for socket in sockets:
                await _hello(socket, await issued_visitor(http, gateway_url))
            return list(
                await asyncio.gather(
                    *(
                        _converse(socket, f"{run}w{index}", timeout_s)
                        for index, socket in enumerate(sockets)
                    )
                )
            )
        finally:
            for socket in sockets:
                await socket.close()


async def _hello(socket: aiohttp.ClientWebSocketResponse, visitor: str) -> None:
    await socket.send_json({"type": "hello", "visitor_id": visitor, "identity_token": None})
    async with asyncio.timeout(CONNECT_TIMEOUT_S):
        while (await _frame(socket)).get("type") != "ready":
            pass


async def _frame(socket: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    message = await socket.receive()
    if message.type != aiohttp.WSMsgType.TEXT:
        raise ConnectionError(f"the web chat socket sent {message.type.name}")
    data = json.loads(message.data)
    return data if isinstance(data, dict) else {}


async def _converse(
    socket: aiohttp.ClientWebSocketResponse, reference: str, timeout_s: float
) -> Visit:
    text = f"[{reference}] Oi, meu pedido ainda não chegou. Vocês conseguem ver o rastreio?"
    sent = time.perf_counter()
    await socket.send_json({"type": "message", "text": text, "client_message_id": reference})
    first_partial: float | None = None
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                frame = await _frame(socket)
                kind = frame.get("type")
                if kind == "partial" and frame.get("reply_to") == reference:
                    if first_partial is None:
                        first_partial = time.perf_counter()
                elif kind == "message" and frame.get("role") == "assistant":
                    return Visit(reference, sent, first_partial, time.perf_counter())
    except (TimeoutError, ConnectionError):
        return Visit(reference, sent, first_partial, None)


def summarize(visits: list[Visit], model: SlowModel) -> WebchatResult:
    """The medians over the answered visitors whose request the model server saw."""
    answered = [v for v in visits if v.final is not None]
    streamed = bool(answered) and all(v.first_partial is not None for v in answered)
    client: list[float] = []
    server: list[float] = []
    for v in answered:
        request = model.request_quoting(v.reference)
        first_token = request.first_token_s if request is not None else None
        seen = v.first_partial if streamed else v.final
        if first_token is None or seen is None:
            continue
        client.append((seen - v.sent) * 1000.0)
        server.append(first_token * 1000.0)
    return WebchatResult(
        visitors=len(visits),
        answered=len(answered),
        streamed=streamed,
        client_ms=statistics.median(client) if client else 0.0,
        server_first_token_ms=statistics.median(server) if server else 0.0,
    )


async def forget_visitors(redis: Redis, run: str) -> int:
    """Delete the replay-detection keys the visitors' messages left; how many there were."""
    # `<visitor id>:<client message id>`, and every client message id of a run starts with it.
    keys = [key async for key in redis.scan_iter(match=f"relaydesk:seen:webchat:*:{run}*")]
    return int(await redis.delete(*keys)) if keys else 0

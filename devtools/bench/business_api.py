"""A local business API for ``relaydesk bench reply --tool-latency``: the read action the model
calls once per turn, answered after the latency a real order system takes.

``GET /orders/status?order_id=…`` checks the gateway's identity assertion (HS256 with the
bench's shared key, for this action) — a call without a valid one is refused with a 401 at
once — then waits ``latency_s`` and answers the order's status. Calls are counted per order id
(the model passes the message's reference), with those in flight and their peak, so a report
can tell whether every reply made exactly one call; and the connections they came over (a
client that keeps too few alive opens one per call, a TLS handshake each against a real API).

`order_status_tool` is the tenant setting that offers the action; `IDENTITY_KEY` is what the
gateways sign with (``RELAYDESK_TOOL_IDENTITY_KEY``).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import jwt
from aiohttp import web

from devtools.bench.model_tool_calls import ToolPlan
from devtools.loopback import serving_on_loopback
from gateway.tools.assertion import HEADER, ISSUER

__all__ = ["IDENTITY_KEY", "ORDER_STATUS", "OrdersApi", "order_status_tool"]

IDENTITY_KEY: Final = "relaydesk-bench-identity-key-of-32-bytes-and-more"
ORDER_STATUS: Final = ToolPlan(name="order_status", argument="order_id")
STATUS_PATH: Final = "/orders/status"
# The endpoint's timeout beyond the API's own latency: a call that times out is a failure the
# report shows, never a wait the bench chose.
TIMEOUT_SLACK_S: Final = 10.0


def order_status_tool(
    api_url: str, latency_s: float, min_link_level: str = "verified"
) -> dict[str, Any]:
    """The tenant setting (`gateway.tools.settings.ToolSettings`) that offers the action at
    ``api_url``. WhatsApp senders are verified (the carrier vouches for the number), so the
    default level is what the bench's customers reach; the gate is still checked on the way."""
    return {
        "name": ORDER_STATUS.name,
        "description": "Where one of the customer's orders is: its status and delivery estimate.",
        "parameters": {
            "type": "object",
            "properties": {ORDER_STATUS.argument: {"type": "string", "maxLength": 64}},
            "required": [ORDER_STATUS.argument],
        },
        "kind": "read",
        "min_link_level": min_link_level,
        "scopes": [],
        "endpoint": {
            "url": api_url + STATUS_PATH,
            "method": "GET",
            "timeout_s": min(60.0, latency_s + TIMEOUT_SLACK_S),
        },
    }


@dataclass
class OrdersApi:
    """The API; ``by_order`` counts the calls answered, by order id."""

    latency_s: float
    key: str = IDENTITY_KEY
    by_order: Counter[str] = field(default_factory=Counter)
    refused: int = 0  # calls without a valid assertion
    peers: set[tuple[str, int]] = field(default_factory=set)  # the client ends calls came from
    in_flight: int = 0
    peak_in_flight: int = 0

    def __post_init__(self) -> None:
        if self.latency_s < 0:
            raise ValueError("the API's latency must not be negative")

    @property
    def calls(self) -> int:
        return sum(self.by_order.values())

    @property
    def connections(self) -> int:
        """The connections the answered calls came over."""
        return len(self.peers)

    def reset(self) -> None:
        """Forget the calls so far and start the peak again from those in flight now."""
        self.by_order = Counter()
        self.refused = 0
        self.peers = set()
        self.peak_in_flight = self.in_flight

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get(STATUS_PATH, self._status)
        return app

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """`app` on a free loopback port; yields its root URL."""
        async with serving_on_loopback(self.app()) as root:
            yield root

    async def _status(self, request: web.Request) -> web.Response:
        try:
            jwt.decode(
                request.headers.get(HEADER, ""),
                self.key,
                algorithms=["HS256"],
                audience=ORDER_STATUS.name,
                issuer=ISSUER,
            )
        except jwt.InvalidTokenError as exc:
            self.refused += 1
            return web.json_response({"error": f"identity assertion: {exc}"}, status=401)
        order_id = request.query.get(ORDER_STATUS.argument, "")
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer is not None:
            self.peers.add((str(peer[0]), int(peer[1])))
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency_s)
        finally:
            self.in_flight -= 1
        self.by_order[order_id] += 1
        return web.json_response(
            {"order_id": order_id, "status": "saiu para entrega", "estimate": "hoje até 18h"}
        )

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import jwt
import pytest
from aiohttp import web

from gateway.tools.assertion import AssertionSigner, IdentityClaims
from gateway.tools.settings import EndpointSettings
from gateway.tools.state import BusinessState, StateSource, business_state
from identity.levels import LinkLevel
from tests.gateway.tools.local_api import local_api

KEY = "s" * 40
CLAIMS = IdentityClaims("cus_ana", LinkLevel.VERIFIED, "whatsapp", "whatsapp:+5511999990000")


class Business:
    def __init__(self) -> None:
        self.assertions: list[str] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/state", self.state)
        app.router.add_post("/slow-state", self.slow)
        return app

    async def state(self, request: web.Request) -> web.Response:
        self.assertions.append(request.headers["X-Relaydesk-Identity"])
        return web.json_response(
            {"open_ticket": "T-981 (refund, waiting)", "last_order": "4471 shipped", "vip": True}
        )

    async def slow(self, request: web.Request) -> web.Response:
        await asyncio.sleep(3)
        return web.json_response({"open_ticket": "late"})


@pytest.fixture
async def business() -> AsyncIterator[tuple[Business, str, StateSource]]:
    server = Business()
    async with local_api(server.app()) as (root, fetcher):
        yield server, root, StateSource(fetcher, AssertionSigner(shared_key=KEY), {})


async def test_the_business_state_fills_the_ticket_and_extra_lines_once_per_few_seconds(
    business: tuple[Business, str, StateSource],
) -> None:
    server, root, source = business
    endpoint = EndpointSettings(url=f"{root}/state")

    first = await source.state_for(endpoint, 300, CLAIMS)
    again = await source.state_for(endpoint, 300, CLAIMS)

    assert first == BusinessState(
        open_ticket="T-981 (refund, waiting)",
        extra=(("last_order", "4471 shipped"), ("vip", "true")),
    )
    assert again == first
    [assertion] = server.assertions  # the second came from what was kept
    claims = jwt.decode(assertion, KEY, algorithms=["HS256"], audience="state")
    assert claims["sub"] == "cus_ana"


async def test_a_slow_state_endpoint_costs_at_most_its_timeout(
    business: tuple[Business, str, StateSource],
) -> None:
    _, root, source = business
    started = time.perf_counter()

    state = await source.state_for(EndpointSettings(url=f"{root}/slow-state"), 200, CLAIMS)

    assert state is None
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("body", ["not json", "[1, 2]", '"text"'])
def test_an_answer_that_is_not_an_object_gives_no_state(body: str) -> None:
    assert business_state(body) is None


def test_long_values_and_many_members_are_cut() -> None:
    members = {"note": "x" * 500} | {f"k{i}": i for i in range(30)}
    body = json.dumps(members)

    state = business_state(body)

    assert state is not None and len(state.extra) == 12
    assert state.extra[0] == ("note", "x" * 200)

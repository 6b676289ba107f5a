"""Fixtures: the shared httpx client, scripted vendors on local sockets, a real window."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Protocol

import httpx
import pytest
from pytest_aiohttp import AiohttpServer

from context import (
    Budget,
    ContextRequest,
    CurrentEpisode,
    FactItem,
    Instruction,
    OperationalState,
    Role,
    SummaryItem,
    TiktokenCounter,
    Turn,
    Window,
    build_window,
    load_encoding,
)
from tests.gateway.providers.vendor import ANTHROPIC_PATH, OPENAI_PATH, ScriptedVendor, Step

SHARED_HEADER = "x-shared-client"
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)

StartVendor = Callable[..., Awaitable[tuple[ScriptedVendor, str]]]


class StartAt(Protocol):
    """``await start(steps, then=Step(...))`` → (vendor, base URL): `start_vendor` at one
    vendor's path and base."""

    def __call__(
        self, steps: Iterable[Step] = (), *, then: Step
    ) -> Awaitable[tuple[ScriptedVendor, str]]: ...


class Shown:
    """An ``on_text`` callback that keeps every text it was given, as a display would show it."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, text: str) -> None:
        self.texts.append(text)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """Stands in for the app's shared client; the header proves which client made a call."""
    async with httpx.AsyncClient(headers={SHARED_HEADER: "yes"}) as client:
        yield client


@pytest.fixture
async def start_vendor(aiohttp_server: AiohttpServer) -> AsyncIterator[StartVendor]:
    """``await start_vendor(path, steps, then=Step(...), base="/v1")`` → (vendor, base URL)."""
    vendors: list[ScriptedVendor] = []

    async def start(
        path: str, steps: Iterable[Step] = (), *, then: Step, base: str = ""
    ) -> tuple[ScriptedVendor, str]:
        vendor = ScriptedVendor(path, steps, then=then)
        vendors.append(vendor)
        server = await aiohttp_server(vendor.app())
        return vendor, str(server.make_url(base)).rstrip("/")

    yield start
    for vendor in vendors:  # let held-back answers go before the servers close
        vendor.release.set()


@pytest.fixture
def start_openai(start_vendor: StartVendor) -> StartAt:
    """A chat-completions vendor; the base URL ends in /v1, as OpenAI's does."""

    def start(steps: Iterable[Step] = (), *, then: Step) -> Awaitable[tuple[ScriptedVendor, str]]:
        return start_vendor(OPENAI_PATH, steps, then=then, base="/v1")

    return start


@pytest.fixture
def start_anthropic(start_vendor: StartVendor) -> StartAt:
    """A Messages API vendor; the base URL is the server's root, as Anthropic's is."""

    def start(steps: Iterable[Step] = (), *, then: Step) -> Awaitable[tuple[ScriptedVendor, str]]:
        return start_vendor(ANTHROPIC_PATH, steps, then=then)

    return start


@pytest.fixture(scope="session")
def counter() -> TiktokenCounter:
    return TiktokenCounter(load_encoding())


def _summary(counter: TiktokenCounter, id: str, channel: str, text: str, day: int) -> SummaryItem:
    ended = T0 + timedelta(days=day)
    transcript = channel == "phone"
    return SummaryItem(
        id=id,
        episode_id=f"ep-{id}",
        channel=channel,
        modality="transcript" if transcript else "typed",
        started_at=ended - timedelta(minutes=20),
        ended_at=ended,
        text=text,
        tokens=counter.count(text),
        confidence=0.62 if transcript else None,
    )


@pytest.fixture(scope="session")
def window(counter: TiktokenCounter) -> Window:
    """A window built by the context engine: facts, two summaries, earlier turns, a message."""

    def fact(id: str, key: str, value: str, **extra: object) -> FactItem:
        item = FactItem(id, key, value, "profile", "whatsapp", f"m-{id}", T0)
        return dataclasses.replace(item, **extra)  # type: ignore[arg-type]

    history: list[tuple[Role, str]] = [
        ("user", "Oi, fiz um pedido semana passada."),
        ("assistant", "Olá! Qual o número do pedido?"),
    ]
    turns = tuple(
        Turn(f"t{i}", role, text, counter.count(text), "whatsapp", T0 + timedelta(minutes=i))
        for i, (role, text) in enumerate(history)
    )
    request = ContextRequest(
        instruction=Instruction("You help the customers of Loja Exemplo. Be brief."),
        state=OperationalState("whatsapp", "verified", ("public", "profile")),
        episode=CurrentEpisode("ep-now", "whatsapp", turns),
        message="Meu pedido 4471 não chegou",
        facts=(
            fact("f1", "email", "ana@example.com"),
            fact("f2", "order_id", "4471", confirmed=False, source_channel="phone", confidence=0.7),
            fact("f3", "preferred name", "Ana"),
        ),
        summaries=(
            _summary(
                counter, "s1", "phone", "Called about a late delivery.\n\nPromised a call.", 1
            ),
            _summary(counter, "s2", "webchat", "Asked how to change the delivery address.", 3),
        ),
    )
    return build_window(request, Budget.default(), counter)

"""The business's operational state of a conversation (an open ticket, the last order's
status), asked of the tenant's `state_endpoint` before the window is built.

The call carries the same identity assertion as an action (``aud: "state"``). Its answer, a
JSON object, fills the window's operational-state slice: ``open_ticket`` as the open ticket,
every other scalar member as an extra line. A reply never waits for it past
`state_timeout_ms`: a late or failed answer leaves the slice as it was. Answers are kept a few
seconds per conversation, so consecutive messages do not each call the business.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from gateway.tools.arguments import CheckedArguments
from gateway.tools.assertion import AssertionSigner, IdentityClaims
from gateway.tools.http_action import call_endpoint
from gateway.tools.settings import EndpointSettings
from outbound.fetcher import SafeFetcher

__all__ = ["STATE_AUDIENCE", "BusinessState", "StateSource", "business_state"]

log = logging.getLogger("relaydesk.tools")

STATE_AUDIENCE: Final = "state"
# What of an answer reaches the window: a few short lines, never a document.
MAX_EXTRA_LINES: Final = 12
MAX_VALUE_CHARS: Final = 200
_NO_ARGUMENTS = CheckedArguments(json_text="{}", dropped=())


@dataclass(frozen=True, slots=True)
class BusinessState:
    open_ticket: str | None = None
    extra: tuple[tuple[str, str], ...] = ()


def business_state(body: str) -> BusinessState | None:
    """The state in an endpoint's answer, or None when it is not a JSON object."""
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    ticket = value.get("open_ticket")
    extra: list[tuple[str, str]] = []
    for key, member in value.items():
        if key == "open_ticket" or not isinstance(member, str | int | float | bool):
            continue
        if len(extra) == MAX_EXTRA_LINES:
            break
        extra.append((str(key)[:64], _text(member)))
    return BusinessState(
        open_ticket=_text(ticket) if isinstance(ticket, str | int) else None, extra=tuple(extra)
    )


def _text(value: str | int | float | bool) -> str:
    text = json.dumps(value) if isinstance(value, bool) else str(value)
    return text[:MAX_VALUE_CHARS]


class StateSource:
    """Asks the business for a conversation's state, keeping answers `ttl_s` seconds (at most
    `capacity` conversations, least recently asked first out)."""

    def __init__(
        self,
        fetcher: SafeFetcher,
        signer: AssertionSigner,
        environ: Mapping[str, str],
        *,
        ttl_s: float = 5.0,
        capacity: int = 2048,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetcher = fetcher
        self._signer = signer
        self._environ = environ
        self._ttl_s = ttl_s
        self._capacity = capacity
        self._clock = clock
        self._kept: OrderedDict[str, tuple[float, BusinessState | None]] = OrderedDict()

    async def state_for(
        self, endpoint: EndpointSettings, timeout_ms: int, claims: IdentityClaims
    ) -> BusinessState | None:
        """The conversation's state, or None when the business gave none in time."""
        now = self._clock()
        kept = self._kept.get(claims.conversation)
        if kept is not None and now - kept[0] < self._ttl_s:
            self._kept.move_to_end(claims.conversation)
            return kept[1]
        state = await self._ask(endpoint, timeout_ms / 1000, claims)
        self._kept[claims.conversation] = (now, state)
        self._kept.move_to_end(claims.conversation)
        while len(self._kept) > self._capacity:
            self._kept.popitem(last=False)
        return state

    async def _ask(
        self, endpoint: EndpointSettings, timeout_s: float, claims: IdentityClaims
    ) -> BusinessState | None:
        if not self._signer.available:
            return None
        bounded = endpoint.model_copy(update={"timeout_s": min(endpoint.timeout_s, timeout_s)})
        try:
            async with asyncio.timeout(timeout_s):
                outcome = await call_endpoint(
                    self._fetcher,
                    bounded,
                    _NO_ARGUMENTS,
                    assertion=self._signer.sign(STATE_AUDIENCE, claims),
                    environ=self._environ,
                )
        except TimeoutError:
            log.info("state of %s: no answer within %.0f ms", claims.conversation, timeout_s * 1e3)
            return None
        if not outcome.ok:
            log.info("state of %s: %s", claims.conversation, outcome.body)
            return None
        return business_state(outcome.body)

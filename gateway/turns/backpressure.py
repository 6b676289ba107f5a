"""Background work yields to acknowledgements.

While this many inbound requests (provider webhooks, web chat and transcript posts) are being
acknowledged in this process, background work (storing the inbox, answering turns) waits, up
to `max_wait_s` per step: under a burst the acknowledgements get the CPU first, and the work,
already durable, follows. It slows down then; it never stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

YIELD_BACKLOG = 2
YIELD_MAX_S = 1.0
YIELD_POLL_S = 0.005


class Backpressure:
    """Counts the inbound requests being acknowledged; background steps await `yield_to_ingest`."""

    def __init__(self, *, backlog: int = YIELD_BACKLOG, max_wait_s: float = YIELD_MAX_S) -> None:
        self.backlog = backlog
        self.max_wait_s = max_wait_s
        self.ingesting = 0  # inbound requests being acknowledged in this process now

    @contextmanager
    def ingest_request(self) -> Iterator[None]:
        """Mark an inbound request being acknowledged (background work yields to it)."""
        self.ingesting += 1
        try:
            yield
        finally:
            self.ingesting -= 1

    async def yield_to_ingest(self) -> None:
        """Wait (bounded) while inbound requests pile up in this process."""
        if self.ingesting < self.backlog:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_wait_s
        while self.ingesting >= self.backlog and loop.time() < deadline:
            await asyncio.sleep(YIELD_POLL_S)

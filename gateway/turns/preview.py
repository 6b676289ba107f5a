"""Showing a streamed reply as it is written (web chat), without slowing the stream.

The provider reports the whole text so far each time more arrives. Only the newest text is
worth showing: while one preview is on its way, later texts replace each other and the newest
goes next. A preview that fails is logged once and previews stop; the stored reply follows
anyway. `close` drops what was not shown yet and lets the preview on its way arrive (waiting
`CLOSE_WAIT_S` at most) before the final reply is sent, so a preview does not overtake it.
When the window carried knowledge lines, a preview shows the citations resolved and no URL the
model wrote, as the final reply will (`context.citations.cited_while_written`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

from channels.base import Channel, ReplyPreviews
from context.citations import cited_while_written
from context.knowledge_refs import KnowledgeRef
from context.reply_attachments import shown_while_written

log = logging.getLogger("relaydesk.preview")

CLOSE_WAIT_S = 1.0


class Preview:
    def __init__(
        self,
        adapter: ReplyPreviews,
        recipient: str,
        reply_to: str | None,
        on_first_text: Callable[[], None] | None = None,
        knowledge: Sequence[KnowledgeRef] = (),
    ) -> None:
        """`on_first_text`: called when the first text arrives (the growing reply is the
        signal from then on, so the typing signal stops); `knowledge`: the window's knowledge
        references, whose citations the preview resolves."""
        self._adapter = adapter
        self._knowledge = tuple(knowledge)
        self._on_first_text = on_first_text
        self._recipient = recipient
        self._reply_to = reply_to
        self._latest: str | None = None
        self._pump: asyncio.Task[None] | None = None
        self._failed = False
        self.shown = 0

    @staticmethod
    def of(
        adapter: Channel | None,
        recipient: str,
        reply_to: str | None,
        on_first_text: Callable[[], None] | None = None,
        knowledge: Sequence[KnowledgeRef] = (),
    ) -> Preview | None:
        """A preview for channels that show replies as they are written, else None."""
        if isinstance(adapter, ReplyPreviews):
            return Preview(adapter, recipient, reply_to, on_first_text, knowledge)
        return None

    async def on_text(self, text: str) -> None:
        """The reply so far (called by the provider as the stream arrives)."""
        if self._failed:
            return
        if self._on_first_text is not None:
            self._on_first_text()
            self._on_first_text = None
        shown = shown_while_written(text)  # no media marker is shown
        if self._knowledge:  # nor a URL the model wrote, nor a number not in the window
            shown = cited_while_written(shown, self._knowledge)
        self._latest = shown
        if self._pump is None or self._pump.done():
            self._pump = asyncio.create_task(self._show(), name="preview")

    async def _show(self) -> None:
        while self._latest is not None:
            text, self._latest = self._latest, None
            try:
                await self._adapter.preview(self._recipient, self._reply_to, text)
            except Exception as exc:  # the final reply is sent whatever happens here
                self._failed = True
                log.warning("reply preview failed", extra={"fields": {"error": str(exc)}})
                return
            self.shown += 1

    async def close(self) -> None:
        self._latest = None
        if self._pump is None or self._pump.done():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._pump), CLOSE_WAIT_S)
        self._pump.cancel()

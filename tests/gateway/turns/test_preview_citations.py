"""A streamed reply's preview when the window carried knowledge lines: the citations resolved
as the final reply will have them, no URL the model wrote and no half-written marker shown."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from channels.base import OutboundMessage
from channels.webchat import WebChatChannel
from context.knowledge_refs import KnowledgeRef
from gateway.turns.preview import Preview

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
RETURNS = KnowledgeRef(4, "doc-returns", "Trocas", "https://help.example.com/trocas", None)
REPLY = "Troca em 30 dias [k4, k9]. Veja https://evil.example.com/x hoje."


async def _previews(knowledge: tuple[KnowledgeRef, ...]) -> list[str]:
    """The texts a web chat visitor is shown while `REPLY` streams in, a character at a time."""
    frames: list[dict[str, Any]] = []

    async def send_frame(visitor: str, frame: dict[str, Any]) -> None:
        frames.append(frame)

    async def deliver(message: OutboundMessage) -> None:
        raise AssertionError("a preview delivers nothing")

    channel = WebChatChannel(deliver, lambda: NOW, send_frame=send_frame)
    preview = Preview.of(channel, "visitor-1", "webchat:c-1", knowledge=knowledge)
    assert preview is not None
    for end in range(1, len(REPLY) + 1):
        await preview.on_text(REPLY[:end])
        for _ in range(3):  # each text shown before the next arrives
            await asyncio.sleep(0)
    await preview.close()
    return [frame["text"] for frame in frames if frame["type"] == "partial"]


async def test_a_preview_shows_resolved_citations_and_never_a_url_or_a_raw_marker() -> None:
    shown = await _previews((RETURNS,))
    # The word being written is held back (it may be a URL); the final reply replaces it.
    assert shown[-1] == "Troca em 30 dias [1]. Veja"
    assert "Troca em 30 dias [1]. " in shown
    assert all("http" not in text and "[k" not in text and "evil" not in text for text in shown)
    assert all("[9" not in text and "[4" not in text for text in shown)


async def test_without_knowledge_the_preview_is_the_text_as_written() -> None:
    shown = await _previews(())
    assert shown[-1] == REPLY

"""What is fetched, and the most bytes each kind may take: a body past its cap is not read on."""

from __future__ import annotations

from enum import Enum

KIB = 1024
MIB = 1024 * KIB


class FetchKind(Enum):
    # A shared contact's card is a few hundred bytes (`channels.vcard` reads up to 64 KiB).
    VCARD = 64 * KIB
    # A file sent with a reply: WhatsApp takes audio, video and a whole message up to 16 MB
    # (images 5 MB); larger documents are not held in memory to send.
    ATTACHMENT = 16 * MIB
    # A voice note to transcribe: OpenAI's transcription API takes files up to 25 MB.
    AUDIO = 25 * MIB
    # A business action's answer: data for the window, cut to a few hundred tokens there.
    ACTION = 256 * KIB
    # A knowledge document or sitemap fetched from its URL: help-center pages are tens of KiB,
    # PDF manuals a few MiB, and a sitemap of a few thousand URLs about 1 MiB. Past what the
    # knowledge base keeps (4 MiB, `gateway.knowledge.documents`) a page is refused with its
    # size rather than cut short; 10 MiB leaves room for a sitemap without holding more.
    DOCUMENT = 10 * MIB

    @property
    def max_bytes(self) -> int:
        return self.value

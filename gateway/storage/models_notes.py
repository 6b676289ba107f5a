"""The ORM row of an operator's internal note on a conversation.

Kept apart from `models.py` (which imports this module at its end) and apart from `messages`:
no window loader, sender or export of messages can pick a note up. A note follows its
conversation: deleting one (an erasure) deletes its notes (ON DELETE CASCADE)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.runtime.clock import utcnow
from gateway.storage.models import Base


class ConversationNote(Base):
    __tablename__ = "conversation_notes"
    __table_args__ = (
        Index("ix_conversation_notes_conversation_id", "conversation_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("conversations.id", ondelete="CASCADE")
    )
    author: Mapped[str] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

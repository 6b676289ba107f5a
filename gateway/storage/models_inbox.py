"""The ORM rows of the inbox: which operator a conversation is assigned to, and how far each
operator has read each conversation (their unread count starts after it).

Kept apart from `models.py` (which imports this module at its end). Both follow their
conversation: deleting one (an erasure) deletes its rows (ON DELETE CASCADE)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.runtime.clock import utcnow
from gateway.storage.models import Base


def _conversation() -> ForeignKey:
    return ForeignKey("conversations.id", ondelete="CASCADE")


class ConversationAssignment(Base):
    """The operator a conversation is assigned to (one at most); no row: unassigned."""

    __tablename__ = "conversation_assignments"

    conversation_id: Mapped[str] = mapped_column(String(32), _conversation(), primary_key=True)
    operator: Mapped[str] = mapped_column(String(200), index=True)
    assigned_by: Mapped[str] = mapped_column(String(200))
    assigned_at: Mapped[datetime] = mapped_column(default=utcnow)


class ConversationRead(Base):
    """When an operator last opened a conversation: the customer's messages after it are
    unread for them."""

    __tablename__ = "conversation_reads"

    conversation_id: Mapped[str] = mapped_column(String(32), _conversation(), primary_key=True)
    operator: Mapped[str] = mapped_column(String(200), primary_key=True)
    read_at: Mapped[datetime] = mapped_column(default=utcnow)

"""Operators' internal notes on a conversation: written and listed, nothing else (they are
never delivered and never read into a window)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models_notes import ConversationNote

NOTES_SHOWN = 200


@dataclass(frozen=True, slots=True)
class NoteRecord:
    id: int
    conversation_id: str
    author: str
    text: str
    created_at: datetime


def _record(row: ConversationNote) -> NoteRecord:
    return NoteRecord(row.id, row.conversation_id, row.author, row.text, row.created_at)


async def add_note(
    session: AsyncSession, *, conversation_id: str, author: str, text: str
) -> NoteRecord:
    row = ConversationNote(conversation_id=conversation_id, author=author, text=text)
    session.add(row)
    await session.flush()
    return _record(row)


async def list_notes(session: AsyncSession, conversation_id: str) -> list[NoteRecord]:
    """The latest notes, oldest first."""
    rows = await session.scalars(
        select(ConversationNote)
        .where(ConversationNote.conversation_id == conversation_id)
        .order_by(ConversationNote.created_at.desc(), ConversationNote.id.desc())
        .limit(NOTES_SHOWN)
    )
    return [_record(row) for row in reversed(list(rows))]

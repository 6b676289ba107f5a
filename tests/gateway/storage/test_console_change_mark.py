"""The console's change mark: a live page reads its conversations again whenever the mark
moves, so it must move with each kind of change another operator's page has to show — a new
conversation, a message, an assignment, an unassignment and a note — and stay put otherwise."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.repositories import assignments, conversations, customers, notes
from gateway.storage.repositories.console_conversations import change_mark
from gateway.storage.repositories.conversations import MessageSeen

NOW = utcnow()


def _seen(key: str, customer_id: str, minutes: int) -> MessageSeen:
    return MessageSeen(
        key, customer_id, "telegram", None, "42", NOW + timedelta(minutes=minutes), inbound=True
    )


async def test_the_mark_moves_with_every_change_a_page_shows_and_only_then(
    session: AsyncSession,
) -> None:
    marks = [await change_mark(session)]
    customer = await customers.create_customer(session)
    key = f"{customer.id}:telegram"
    conversation = (await conversations.note_messages(session, [_seen(key, customer.id, 0)]))[key]
    marks.append(await change_mark(session))  # a new conversation
    await conversations.note_messages(session, [_seen(key, customer.id, 1)])
    marks.append(await change_mark(session))  # a message
    await assignments.assign(session, conversation.id, "bia.ops", by="ana.ops")
    marks.append(await change_mark(session))  # assigned
    await assignments.assign(session, conversation.id, None, by="ana.ops")
    marks.append(await change_mark(session))  # unassigned
    await notes.add_note(
        session, conversation_id=conversation.id, author="ana.ops", text="Cliente VIP"
    )
    marks.append(await change_mark(session))  # a note

    # Each change moves the mark from the one a page saw last (an unassignment may bring back
    # the mark from before the assignment: the list is then the same as it was).
    assert all(before != after for before, after in zip(marks, marks[1:], strict=False)), marks
    assert marks[-1] not in marks[:-1]
    assert await change_mark(session) == marks[-1]  # nothing changed: the same mark

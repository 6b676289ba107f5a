"""Survey rows: one waiting per conversation (a new question closes the older), an answer
stored once, a survey closed unanswered takes no answer, "asked in this episode"."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.records import ConversationRecord
from gateway.storage.repositories import conversations, csat, customers
from gateway.storage.repositories.conversations import MessageSeen

NOW = utcnow()


async def _conversation(session: AsyncSession) -> ConversationRecord:
    customer = await customers.create_customer(session)
    key = f"{customer.id}:telegram"
    seen = MessageSeen(key, customer.id, "telegram", None, "42", NOW, inbound=True)
    return (await conversations.note_messages(session, [seen]))[key]


async def _ask(
    session: AsyncSession, conversation: ConversationRecord, episode: str, minutes: int
) -> csat.SurveyRecord:
    return await csat.record_asked(
        session,
        conversation_id=conversation.id,
        customer_id=conversation.customer_id,
        channel=conversation.channel,
        tenant="",
        episode_id=episode,
        trigger="handed_back",
        person_took_part=True,
        at=NOW + timedelta(minutes=minutes),
    )


async def test_an_answer_is_stored_once_on_the_survey_waiting(session: AsyncSession) -> None:
    conversation = await _conversation(session)
    assert await csat.waiting_survey(session, conversation.id) is None
    asked = await _ask(session, conversation, "ep1", 1)
    assert await csat.asked_in_episode(session, conversation.id, "ep1")
    assert not await csat.asked_in_episode(session, conversation.id, "ep2")
    assert await csat.waiting_survey(session, conversation.id) == asked
    answered = await csat.record_answer(session, asked.id, 4, NOW + timedelta(minutes=2))
    assert answered is not None
    assert (answered.score, answered.person_took_part) == (4, True)
    assert answered.answered_at == NOW + timedelta(minutes=2)
    assert await csat.waiting_survey(session, conversation.id) is None
    # A second tap changes nothing.
    assert await csat.record_answer(session, asked.id, 1, NOW + timedelta(minutes=3)) is None
    assert await csat.last_asked_at(session, conversation.id) == NOW + timedelta(minutes=1)


async def test_a_new_question_or_another_message_closes_the_survey_unanswered(
    session: AsyncSession,
) -> None:
    conversation = await _conversation(session)
    first = await _ask(session, conversation, "ep1", 1)
    second = await _ask(session, conversation, "ep2", 5)
    assert await csat.waiting_survey(session, conversation.id) == second
    assert await csat.record_answer(session, first.id, 5, NOW + timedelta(minutes=6)) is None
    await csat.close_unanswered(session, second.id, NOW + timedelta(minutes=7))
    assert await csat.waiting_survey(session, conversation.id) is None
    assert await csat.record_answer(session, second.id, 5, NOW + timedelta(minutes=8)) is None

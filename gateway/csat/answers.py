"""Taking the answer to a satisfaction question: a customer's message while a survey of the
conversation waits is read as a score (a button's payload or a bare digit 1-5) — stored,
counted and thanked without the model — or, being anything else, closes the survey unanswered
and goes to the bot as usual."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.csat.rules import read_answer
from gateway.runtime.clock import utcnow
from gateway.runtime.metrics import Metrics
from gateway.storage.repositories import conversations, csat


class SurveyAnswers:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], metrics: Metrics | None = None
    ) -> None:
        self._sessions = sessions
        self._metrics = metrics

    async def take(self, conversation_key: str, text: str | None) -> int | None:
        """The score the message answers a waiting survey with (stored and counted), or None:
        no survey waits, or the message is no answer (the survey then closes unanswered)."""
        async with self._sessions.begin() as session:
            conversation = await conversations.by_key(session, conversation_key)
            if conversation is None:
                return None
            waiting = await csat.waiting_survey(session, conversation.id)
            if waiting is None:
                return None
            score = read_answer(text)
            if score is None:
                await csat.close_unanswered(session, waiting.id, utcnow())
                return None
            answered = await csat.record_answer(session, waiting.id, score, utcnow())
        if answered is None:
            return None
        if self._metrics is not None:
            self._metrics.csat_answers.labels(
                score=str(score), person="yes" if answered.person_took_part else "no"
            ).inc()
        return score

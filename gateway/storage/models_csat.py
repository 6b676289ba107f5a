"""The ORM row of a satisfaction survey: the question asked of a customer after a
conversation was handed back to the bot or closed by idle time, and their answer.

Kept apart from `models.py` (which imports this module at its end). A survey follows its
conversation: deleting one (an erasure) deletes its surveys (ON DELETE CASCADE)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, SmallInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from gateway.runtime.clock import utcnow
from gateway.storage.models import TENANT_LENGTH, Base


class CsatSurvey(Base):
    """One question asked; `score` stays null until the customer answers (1-5). `closed_at`:
    the survey stopped waiting for an answer (answered, or the customer wrote something
    else)."""

    __tablename__ = "csat_surveys"
    __table_args__ = (
        Index("ix_csat_surveys_conversation_id", "conversation_id", "asked_at"),
        CheckConstraint("score IS NULL OR (score >= 1 AND score <= 5)", name="score"),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("conversations.id", ondelete="CASCADE")
    )
    customer_id: Mapped[str] = mapped_column(String(32))
    channel: Mapped[str] = mapped_column(String(32))
    tenant: Mapped[str] = mapped_column(String(TENANT_LENGTH))
    episode_id: Mapped[str | None] = mapped_column(String(32))
    # "handed_back" (an operator gave the conversation back to the bot) or "idle_close".
    trigger: Mapped[str] = mapped_column(String(16))
    # Whether an operator wrote or held the conversation since the previous survey.
    person_took_part: Mapped[bool]
    asked_at: Mapped[datetime] = mapped_column(default=utcnow)
    answered_at: Mapped[datetime | None]
    closed_at: Mapped[datetime | None]
    score: Mapped[int | None] = mapped_column(SmallInteger)

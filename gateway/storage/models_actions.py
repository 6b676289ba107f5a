"""The ORM rows of actions: a write the model asked for, waiting for the customer's word.

Kept apart from `models.py` (which imports this module at its end, so the table is part of
the one metadata every migration and test compares against)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.runtime.clock import utcnow
from gateway.storage.models import TENANT_LENGTH, Base, new_id
from gateway.tenant_ref import DEFAULT_TENANT_ENCODED

# A turn's id, as `models.BigId`.
_TURN_ID = BigInteger().with_variant(Integer(), "sqlite")


class ActionConfirmation(Base):
    """A write the model asked for in a turn, sent only once the channel identity that wrote
    confirms it before `expires_at` (`status`: waiting → sent | cancelled | expired), or, for a
    tool that needs an operator, once one approves it in the console (approval → approved |
    rejected | expired). Its id is the `Idempotency-Key` of the one call it makes."""

    __tablename__ = "action_confirmations"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant: Mapped[str] = mapped_column(
        String(TENANT_LENGTH), default=DEFAULT_TENANT_ENCODED, server_default=DEFAULT_TENANT_ENCODED
    )
    conversation_key: Mapped[str] = mapped_column(String(200), index=True)
    customer_id: Mapped[str] = mapped_column(String(32), index=True)
    identity_id: Mapped[str] = mapped_column(String(32))
    turn_id: Mapped[int] = mapped_column(_TURN_ID)
    action: Mapped[str] = mapped_column(String(64))
    arguments: Mapped[str] = mapped_column(Text)  # the checked arguments, JSON
    status: Mapped[str] = mapped_column(String(16), default="waiting")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    decided_at: Mapped[datetime | None]


class IdentityVerification(Base):
    """A one-time code sent to prove a channel identity owns an identifier (step-up
    verification, `identity.step_up`). Only a salted digest of the code is kept; `status`:
    sent → verified | wrong-then-locked (`locked`) | expired | replaced (a newer code)."""

    __tablename__ = "identity_verifications"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant: Mapped[str] = mapped_column(
        String(TENANT_LENGTH), default=DEFAULT_TENANT_ENCODED, server_default=DEFAULT_TENANT_ENCODED
    )
    identity_id: Mapped[str] = mapped_column(String(32), index=True)  # who must type it
    customer_id: Mapped[str] = mapped_column(String(32), index=True)  # that identity's customer
    target_customer_id: Mapped[str] = mapped_column(String(32), index=True)  # the holder
    identifier_kind: Mapped[str] = mapped_column(String(32))
    identifier_value: Mapped[str] = mapped_column(String(320))
    sent_through: Mapped[str] = mapped_column(String(32))  # the channel the code went by
    code_digest: Mapped[str] = mapped_column(String(64))
    salt: Mapped[str] = mapped_column(String(32))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(16), default="sent")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    decided_at: Mapped[datetime | None]

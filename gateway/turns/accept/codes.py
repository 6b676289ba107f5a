"""A step-up code typed back, checked as the message is accepted, before it is stored: the
six digits are taken out of the text (they never reach storage, a window or the model) and
the message keeps only what came of them (`MessageMeta.verification`).

A message holding no six digits costs nothing here; one that does costs one read, for the
code waiting for its channel identity (none: the digits are the customer's, an order number
say, and stay). A verified code raises the identity to verified with evidence
``otp:<channel>`` and joins it to the customer holding the identifier (`identity.step_up`),
all in the transaction that stores the message, which is stored under that customer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from sqlalchemy.ext.asyncio import AsyncSession

from channels.base import InboundMessage
from gateway.customers.operator_actions import merge_customers
from gateway.customers.resolve import IdentityRules, ResolvedIdentity
from gateway.events.outbox import IDENTITY_VERIFIED, EventOutbox
from gateway.runtime.clock import utcnow
from gateway.runtime.metrics import Metrics
from gateway.storage.repositories import customers, pending_links, verifications
from gateway.storage.repositories.audit import record_audit
from gateway.tools.verification import codes_match
from identity import LinkLevel
from identity.step_up import (
    STEP_UP_EVIDENCE,
    Attempt,
    codes_in,
    join_after,
    judge,
    otp_evidence,
    without_codes,
)

__all__ = ["CodeCheck", "Checked"]

log = logging.getLogger("relaydesk.verification")

# The actor of what a typed code does (audit rows, merges).
STEP_UP_ACTOR = "step-up verification"
# Where an attempt leaves its code row.
_ROW_STATUS = {
    Attempt.VERIFIED: "verified",
    Attempt.WRONG: verifications.SENT,
    Attempt.EXPIRED: "expired",
    Attempt.LOCKED: verifications.LOCKED,
}


@dataclass(frozen=True, slots=True)
class Checked:
    """The message to store (its codes taken out), the identity to store it under, and what
    the code came to (None: no code was waiting)."""

    inbound: InboundMessage
    identity: ResolvedIdentity
    attempt: Attempt | None = None


class CodeCheck:
    def __init__(self, *, events: EventOutbox | None = None, metrics: Metrics | None = None):
        self._events = events
        self._metrics = metrics

    async def check(
        self,
        session: AsyncSession,
        inbound: InboundMessage,
        identity: ResolvedIdentity,
        rules: IdentityRules,
    ) -> Checked:
        typed = codes_in(inbound.text)
        if not typed:
            return Checked(inbound, identity)
        now = utcnow()
        waiting = await verifications.waiting(session, identity.identity_id, now)
        if waiting is None:
            return Checked(inbound, identity)
        if waiting.status == verifications.LOCKED:
            attempt = Attempt.LOCKED
        else:
            attempt = judge(
                matches=codes_match(waiting.salt, typed[0], waiting.code_digest),
                attempts_before=waiting.attempts,
                expires_at=waiting.expires_at,
                now=now,
            )
            if not await verifications.attempt(session, waiting, _ROW_STATUS[attempt], now):
                attempt = Attempt.WRONG  # another message counted on the same row first
        cleaned = replace(inbound, text=without_codes(inbound.text, attempt.value))
        if self._metrics is not None:
            self._metrics.verifications.labels("attempt", attempt.value).inc()
        if attempt is not Attempt.VERIFIED:
            await _audit(session, f"verification.{attempt.value}", identity, waiting, {})
            return Checked(cleaned, identity, attempt)
        return Checked(cleaned, await self._verified(session, identity, rules, waiting), attempt)

    async def _verified(
        self,
        session: AsyncSession,
        identity: ResolvedIdentity,
        rules: IdentityRules,
        waiting: verifications.VerificationRecord,
    ) -> ResolvedIdentity:
        """The identity raised and joined (or the join proposed) after a verified code."""
        counts = await customers.identifier_counts(
            session, [identity.customer_id], link_level=LinkLevel.VERIFIED.value
        )
        join = join_after(
            identity_customer=identity.customer_id,
            target=waiting.target_customer_id,
            identity_verified_count=sum(count for _, _, count in counts),
        )
        evidence = otp_evidence(waiting.sent_through)
        if join.propose:
            await pending_links.propose_link(
                session,
                identity_id=identity.identity_id,
                target_customer_id=join.target,
                identifier_kind=waiting.identifier_kind,
                identifier_value=waiting.identifier_value,
                claimed_level=LinkLevel.VERIFIED.value,
                reason="verified_conflict",
            )
            await _audit(session, "verification.proposed", identity, waiting, {})
            return identity
        if join.merge:
            await merge_customers(
                session,
                identity.customer_id,
                join.target,
                actor=STEP_UP_ACTOR,
                reason=f"a one-time code sent by {waiting.sent_through} was typed back",
            )
        stored = await customers.identity_by_id(session, identity.identity_id)
        await customers.update_identity(
            session,
            identity.identity_id,
            link_level=LinkLevel.VERIFIED.value,
            customer_id=join.target,
            evidence={**stored.evidence, STEP_UP_EVIDENCE: evidence},
        )
        await _audit(session, "identity.verified", identity, waiting, {"evidence": evidence})
        if self._events is not None and self._events.enabled:
            await self._events.record(
                session,
                IDENTITY_VERIFIED,
                {
                    "customer_id": join.target,
                    "identity_id": identity.identity_id,
                    "channel": identity.key.channel,
                    "evidence": evidence,
                    "merged_customer_id": identity.customer_id if join.merge else None,
                },
            )
        return replace(
            identity,
            customer_id=join.target,
            level=LinkLevel.VERIFIED,
            allowed_scopes=rules.policy.allowed_scopes(LinkLevel.VERIFIED, identity.key.channel),
            own_facts_only=LinkLevel.VERIFIED in rules.policy.own_facts_only,
        )


async def _audit(
    session: AsyncSession,
    action: str,
    identity: ResolvedIdentity,
    waiting: verifications.VerificationRecord,
    extra: dict[str, object],
) -> None:
    await record_audit(
        session,
        actor=STEP_UP_ACTOR,
        action=action,
        reason=f"a code typed by the channel identity {identity.identity_id}",
        subject_type="customer",
        subject_id=waiting.target_customer_id,
        details={
            "identity_id": identity.identity_id,
            "channel": identity.key.channel,
            "sent_through": waiting.sent_through,
            "identifier_kind": waiting.identifier_kind,
            "verification_id": waiting.id,
            **extra,
        },
    )

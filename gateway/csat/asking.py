"""Asking the satisfaction question: after an operator hands a conversation back to the bot,
or when a conversation the bot answers has been idle for the tenant's `episode_idle_minutes`
(`gateway.csat.idle`).

The question goes through the operator-message path (marked `CANNED_CSAT_QUESTION`: the
deliver step adds the 1-5 buttons where the channel shows them; stored on the conversation's
episode and delivered like any reply; named after the operator who handed back, or the bot's
after an idle close), and its survey row is written in the same transaction as the message, so
a question that was never stored is never waited for.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from gateway.csat.rules import AskDecision, Skip, Trigger, decide
from gateway.events.outbox import EventOutbox
from gateway.runtime.clock import utcnow
from gateway.storage.message_meta import CANNED_CSAT_QUESTION, MessageMeta, TemplateUse
from gateway.storage.records import ConversationRecord, MessageRecord
from gateway.storage.repositories import conversations, csat, episodes, tenants
from gateway.turns.deliver import Deliverer
from gateway.turns.handoff import ConversationNotFound
from gateway.turns.operator_messages import NoRecipient, send_operator_message

log = logging.getLogger("relaydesk.csat")
TWILIO_WHATSAPP = "whatsapp"
NOT_IDLE = AskDecision(False, None)


@dataclass(frozen=True, slots=True)
class Asker:
    """What sending a question takes (the app's sessions, token counter, events, deliver step)."""

    sessions: async_sessionmaker[AsyncSession]
    counter: TokenCounter
    events: EventOutbox | None
    deliverer: Deliverer


@dataclass(frozen=True, slots=True)
class _Plan:
    conversation: ConversationRecord
    question: str
    meta: MessageMeta
    decision: AskDecision
    person_took_part: bool


async def _plan(
    session: AsyncSession, conversation_id: str, trigger: Trigger, now: datetime
) -> _Plan | None:
    conversation = await conversations.get(session, conversation_id)
    if conversation is None:
        return None
    tenant = await tenants.settings_for(session, conversation.tenant, channel=conversation.channel)
    if not tenant.csat_enabled:  # the common case, decided before any other read
        return _Plan(conversation, "", MessageMeta(), AskDecision(False, Skip.SWITCHED_OFF), False)
    episode = await episodes.latest_open_episode(
        session, conversation.customer_id, conversation.channel, conversation.identity_id
    )
    if episode is None:
        return None  # nothing was said since the last close: nothing to rate
    idle = timedelta(minutes=tenant.episode_idle_minutes)
    if trigger is Trigger.IDLE_CLOSE and (
        conversation.owner != "bot" or now - conversation.last_message_at < idle
    ):
        return _Plan(conversation, "", MessageMeta(), NOT_IDLE, False)
    asked = await csat.asked_in_episode(session, conversation.id, episode.id)
    decision = decide(
        enabled=tenant.csat_enabled,
        channel=conversation.channel,
        asked_in_episode=asked,
        last_inbound_at=conversation.last_inbound_at,
        window_closed_at=conversation.window_closed_at,
        now=now,
    )
    person = trigger is Trigger.HANDED_BACK
    if decision.ask and not person:
        # A person took part when an operator wrote since the previous survey.
        since = await csat.last_asked_at(session, conversation.id)
        person = await csat.operator_wrote(session, episode.id, since)
    meta = MessageMeta(canned=CANNED_CSAT_QUESTION)
    if conversation.channel == TWILIO_WHATSAPP and tenant.csat_template is not None:
        # Twilio shows buttons only through a Content template: the tenant's, when it has one.
        meta = replace(meta, template=TemplateUse(tenant.csat_template))
    return _Plan(conversation, tenant.csat_question, meta, decision, person)


async def ask(
    asker: Asker,
    conversation_id: str,
    trigger: Trigger,
    *,
    operator: str | None = None,
    now: datetime | None = None,
) -> bool:
    """Ask the question if the rules allow it (`gateway.csat.rules.decide`; after an idle
    close also only once the conversation is idle and with the bot); whether it was asked.
    `operator`: who handed back (the question goes in their name); None: the bot's."""
    at = now if now is not None else utcnow()
    async with asker.sessions() as session:
        plan = await _plan(session, conversation_id, trigger, at)
    if plan is None or not plan.decision.ask:
        if plan is not None and plan.decision.skip is not None:
            skip: Skip = plan.decision.skip
            log.info("csat not asked", extra={"fields": {"skip": skip.value}})
        return False
    conversation = plan.conversation

    async def record(session: AsyncSession, message: MessageRecord) -> None:
        await csat.record_asked(
            session,
            conversation_id=conversation.id,
            customer_id=conversation.customer_id,
            channel=conversation.channel,
            tenant=conversation.tenant.encode(),
            episode_id=message.episode_id,
            trigger=trigger,
            person_took_part=plan.person_took_part,
            at=message.created_at,
        )

    try:
        await send_operator_message(
            sessions=asker.sessions,
            counter=asker.counter,
            events=asker.events,
            deliverer=asker.deliverer,
            conversation_id=conversation.id,
            text=plan.question,
            actor=operator or "bot",
            meta=plan.meta,
            stored=record,
            any_owner=True,
            by_bot=operator is None,
        )
    except (NoRecipient, ConversationNotFound):
        return False  # nobody to ask (the customer never wrote, or it was erased meanwhile)
    return True


async def ask_after_handback(
    *,
    sessions: async_sessionmaker[AsyncSession],
    counter: TokenCounter,
    events: EventOutbox | None,
    deliverer: Deliverer,
    conversation_id: str,
    operator: str,
) -> bool:
    """After a hand-back a person took part by definition: an operator held the conversation."""
    asker = Asker(sessions, counter, events, deliverer)
    return await ask(asker, conversation_id, Trigger.HANDED_BACK, operator=operator)

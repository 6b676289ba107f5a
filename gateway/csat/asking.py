"""Asking the satisfaction question after an operator hands a conversation back to the bot.

The question goes through the operator-message path (marked `CANNED_CSAT_QUESTION`: the
deliver step adds the 1-5 buttons where the channel shows them; stored on the conversation's
episode, delivered like any reply, named after the operator who handed back), and
its survey row is written in the same transaction as the message, so a question that was
never stored is never waited for.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from gateway.csat.rules import AskDecision, Trigger, decide
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


@dataclass(frozen=True, slots=True)
class _Plan:
    conversation: ConversationRecord
    episode_id: str | None
    question: str
    meta: MessageMeta
    decision: AskDecision


async def _plan(sessions: async_sessionmaker[AsyncSession], conversation_id: str) -> _Plan | None:
    async with sessions() as session:
        conversation = await conversations.get(session, conversation_id)
        if conversation is None:
            return None
        tenant = await tenants.settings_for(
            session, conversation.tenant, channel=conversation.channel
        )
        episode = await episodes.latest_open_episode(
            session, conversation.customer_id, conversation.channel, conversation.identity_id
        )
        episode_id = episode.id if episode is not None else None
        asked = episode_id is not None and await csat.asked_in_episode(
            session, conversation.id, episode_id
        )
    decision = decide(
        enabled=tenant.csat_enabled,
        channel=conversation.channel,
        asked_in_episode=asked,
        last_inbound_at=conversation.last_inbound_at,
        window_closed_at=conversation.window_closed_at,
        now=utcnow(),
    )
    meta = MessageMeta(canned=CANNED_CSAT_QUESTION)
    if conversation.channel == TWILIO_WHATSAPP and tenant.csat_template is not None:
        # Twilio shows buttons only through a Content template: the tenant's, when it has one.
        meta = replace(meta, template=TemplateUse(tenant.csat_template))
    return _Plan(conversation, episode_id, tenant.csat_question, meta, decision)


async def ask_after_handback(
    *,
    sessions: async_sessionmaker[AsyncSession],
    counter: TokenCounter,
    events: EventOutbox | None,
    deliverer: Deliverer,
    conversation_id: str,
    operator: str,
) -> bool:
    """Ask the question if the rules allow it (`gateway.csat.rules.decide`); whether it was
    asked. A person took part by definition: an operator held the conversation."""
    plan = await _plan(sessions, conversation_id)
    if plan is None or not plan.decision.ask:
        if plan is not None:
            log.info(
                "csat not asked",
                extra={"conversation": conversation_id, "skip": plan.decision.skip},
            )
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
            trigger=Trigger.HANDED_BACK,
            person_took_part=True,
            at=message.created_at,
        )

    try:
        await send_operator_message(
            sessions=sessions,
            counter=counter,
            events=events,
            deliverer=deliverer,
            conversation_id=conversation.id,
            text=plan.question,
            actor=operator,
            meta=plan.meta,
            stored=record,
            any_owner=True,
        )
    except (NoRecipient, ConversationNotFound):
        return False  # nobody to ask (the customer never wrote, or it was erased meanwhile)
    return True

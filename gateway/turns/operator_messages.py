"""An operator's message to a customer: stored as the conversation's assistant message (its
`MessageMeta` names the operator), then sent through the deliver step like any reply.

The deliver step sends a turn's reply to the sender of the turn's inbound message. An
operator's message answers no message in particular, and `turns.inbound_message_id` is unique
(one turn per customer message), so it gets a turn of its own whose inbound message and reply
are both the operator's message (status "operator", never pending): leases, retries
(`retry_deliveries`) and status callbacks (`outbound_messages.turn_id`) work unchanged. Its
recipient is stored with it (`MessageMeta.recipient`): the sender of the conversation's latest
customer message, as when the message was written.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Media
from context import TokenCounter
from gateway.events.outbox import EventOutbox
from gateway.storage.message_meta import OPERATOR_AUTHOR, MessageMeta
from gateway.storage.records import ConversationRecord, MessageRecord, NewMessage
from gateway.storage.repositories import conversations, episodes, messages, turns
from gateway.storage.repositories.conversations import MessageSeen
from gateway.turns.deliver import DELIVERY_LEASE, Deliverer
from gateway.turns.handoff import ConversationNotFound, message_created


class NotHeld(Exception):
    """The operator does not hold the conversation."""


class NoRecipient(Exception):
    """The conversation has no customer message yet: there is nobody to write to."""


async def send_operator_message(
    *,
    sessions: async_sessionmaker[AsyncSession],
    counter: TokenCounter,
    events: EventOutbox | None,
    deliverer: Deliverer,
    conversation_id: str,
    text: str,
    actor: str,
    media: Sequence[Media] = (),
    meta: MessageMeta | None = None,
    stored: Callable[[AsyncSession, MessageRecord], Awaitable[None]] | None = None,
    any_owner: bool = False,
    by_bot: bool = False,
) -> MessageRecord:
    """Store the message and its attachments (by URL; only by the operator holding the
    conversation, unless `any_owner`: what the team owes the customer whoever answers, e.g.
    an operator's decision on an action; `meta` stored with it, e.g. the template it goes as;
    `stored` called in the same transaction, e.g. to audit it) and hand it to the deliver
    step; returns it once stored. `by_bot`: the gateway's own words (a satisfaction question
    after an idle close), stored as the bot's. Raises `ConversationNotFound`, `NotHeld`,
    `NoRecipient`."""
    async with sessions.begin() as session:
        conversation = await conversations.lock(session, conversation_id)
        if conversation is None:
            raise ConversationNotFound(conversation_id)
        held = conversation.owner == "human" and conversation.held_by == actor
        if not (held or any_owner):
            holder = conversation.held_by or conversation.owner
            raise NotHeld(f"the conversation is held by {holder}, not by {actor}")
        latest = await conversations.latest_customer_message(session, conversation)
        if latest is None or latest.sender is None:
            raise NoRecipient("the customer has not written on this conversation yet")
        message = await _store(
            session,
            counter,
            conversation,
            latest,
            text,
            None if by_bot else actor,  # no actor: the bot's
            media,
            meta or MessageMeta(),
        )
        turn = await turns.create_operator_turn(
            session, message, conversation.conversation_key, DELIVERY_LEASE
        )
        noted = await conversations.note_messages(
            session,
            [
                MessageSeen(
                    conversation.conversation_key,
                    conversation.customer_id,
                    conversation.channel,
                    conversation.identity_id,
                    conversation.external_id,
                    message.created_at,
                    tenant=message.tenant,
                )
            ],
        )
        await message_created(session, events, noted[conversation.conversation_key], message)
        if stored is not None:
            await stored(session, message)
    deliverer.send_in_order(conversation.conversation_key, turn, message, message)
    return message


async def _store(
    session: AsyncSession,
    counter: TokenCounter,
    conversation: ConversationRecord,
    latest: MessageRecord,
    text: str,
    actor: str | None,
    media: Sequence[Media],
    meta: MessageMeta,
) -> MessageRecord:
    """On the conversation's open episode (a new one when none is open)."""
    episode = await episodes.latest_open_episode(
        session, conversation.customer_id, conversation.channel, latest.identity_id
    )
    if episode is None:
        episode = await episodes.open_episode(
            session,
            customer_id=conversation.customer_id,
            channel=conversation.channel,
            identity_id=latest.identity_id,
            tenant=conversation.tenant,
        )
    recipient = latest.sender.sender if latest.sender is not None else ""
    message = await messages.append_message(
        session,
        NewMessage(
            customer_id=conversation.customer_id,
            episode_id=episode.id,
            channel=conversation.channel,
            role="assistant",
            text=text,
            token_count=counter.count(text),
            identity_id=latest.identity_id,
            provider_message_id=f"operator:{uuid.uuid4().hex}",
            thread_key=latest.thread_key,
            media=tuple(media),
            meta=replace(
                meta,
                author=OPERATOR_AUTHOR if actor is not None else None,
                actor=actor,
                recipient=recipient,
            ),
            tenant=conversation.tenant,
        ),
        add_to_episode=False,
    )
    await episodes.record_message(
        session, episode.id, at=message.created_at, tokens=message.token_count
    )
    return message

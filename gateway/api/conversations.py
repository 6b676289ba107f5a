"""Operator API for conversations: who answers them, taking one, writing to the customer and
handing it back to the bot.

Callers authenticate like the rest of `/v1/operator` (`gateway.operators.actor.operator_actor`):
with the Bearer API key (the body's `actor` says who acts) or a console login (its username is
the actor; POSTs carry `X-CSRF-Token`). Every owner change is audited with its actor and
reason and announced as an event in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.ext.asyncio import AsyncSession

from gateway import channel_catalog
from gateway.api import conversation_assignment, inbox_rows
from gateway.api.context import ChannelIdentityIn, claim_for_identity
from gateway.api.operator_bodies import AttachmentIn, Decision
from gateway.api.operator_sends import conversation_path, operator_send_answers, vetted_media
from gateway.csat.asking import ask_after_handback
from gateway.customers.resolve import identify
from gateway.http.bodies import path_id, query_text, read_json
from gateway.http.errors import BadRequest, Conflict, NotFound
from gateway.http.openapi import document
from gateway.http.tenant import tenant_of
from gateway.keys import COUNTER, DELIVER, EVENTS, FETCHER, METRICS, SESSIONS, SETTINGS
from gateway.operators.actor import operator_actor
from gateway.operators.names import NAME_FACT_KEYS, NameEvidence, best_name, masked_identifier
from gateway.reports.figures import HandoffReason
from gateway.runtime.clock import utcnow
from gateway.storage.records import ConversationRecord
from gateway.storage.repositories import (
    assignments,
    conversations,
    identity_names,
    service_window,
    tenants,
)
from gateway.storage.repositories.conversations import (
    OWNERS,
    ConversationMessage,
    MessageSeen,
)
from gateway.turns.accept import conversation_key
from gateway.turns.handoff import (
    ConversationNotFound,
    OwnerChange,
    change_owner,
    conversation_json,
)
from gateway.turns.operator_messages import send_operator_message
from gateway.turns.service_window import window_json
from identity import InvalidIdentifier
from identity.conversation_owner import HandedBack, Owner, Refused, Took


class HandoffIn(Decision, ChannelIdentityIn):
    """Take the conversation of a channel identity (`channel` and `external_id` as in
    `POST /v1/context`)."""


class OperatorMessageIn(BaseModel):
    """`text` may be empty when the message carries `media`."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field("", max_length=8000)
    actor: str = Field("api", min_length=1, max_length=200)
    media: list[AttachmentIn] = Field(default_factory=list, max_length=10)


async def _waiting_alert(request: web.Request) -> timedelta:
    async with request.app[SESSIONS]() as session:
        tenant = await tenants.settings_for(session, tenant_of(request))
    return timedelta(seconds=tenant.handoff_waiting_alert_s)


async def _names(session: AsyncSession, found: Sequence[ConversationRecord]) -> dict[str, str]:
    """Conversation id → the name the console shows (`gateway.operators.names`)."""
    stated = await identity_names.stated_names(
        session, (c.customer_id for c in found), NAME_FACT_KEYS
    )
    profiles = await identity_names.profile_names(
        session, (c.identity_id for c in found if c.identity_id)
    )
    return {
        c.id: best_name(
            NameEvidence(
                channel=c.channel,
                external_id=c.external_id,
                stated=stated.get(c.customer_id, {}),
                profile=profiles.get(c.identity_id) if c.identity_id else None,
            )
        )
        for c in found
    }


def _listed(
    conversation: ConversationRecord,
    alert: timedelta,
    held: dict[str, int],
    names: dict[str, str],
) -> dict[str, Any]:
    now = utcnow()
    waited = now - conversation.owner_since
    return {
        **conversation_json(conversation),
        # The stated name, the channel's profile name or a masked id; never the raw id.
        "name": names.get(conversation.id)
        or masked_identifier(conversation.channel, conversation.external_id),
        "waiting_too_long": conversation.owner == "waiting" and waited > alert,
        # WhatsApp's 24-hour window, and the replies held outside it since the customer wrote.
        "window": window_json(conversation, now),
        "held_replies": held.get(conversation.id, 0),
    }


def _message_json(message: ConversationMessage) -> dict[str, Any]:
    return {
        "id": message.id,
        "role": message.role,
        "author": message.author,
        "actor": message.actor,
        "text": message.text,
        "channel": message.channel,
        "created_at": message.created_at.isoformat(),
        "transcript_confidence": message.transcript_confidence,
        "media": [
            {
                "url": m.url,
                "content_type": m.content_type,
                "caption": m.caption,
                "filename": m.filename,
            }
            for m in message.media
        ],
        "delivery": (
            None
            if message.delivery_status is None
            else {"status": message.delivery_status, "error": message.delivery_error}
        ),
    }


async def _inbox_state(
    session: AsyncSession, found: Sequence[ConversationRecord], who: str | None
) -> dict[str, dict[str, Any]]:
    """Conversation id → `assigned_to` and the calling login's `unread` count (null for the
    API key, which reads for nobody)."""
    assigned = await assignments.assignments(session, found)
    unread = await assignments.unread_counts(session, found, who) if who else {}
    return {
        c.id: {
            "assigned_to": assigned.get(c.id),
            "unread": unread.get(c.id, 0) if who else None,
        }
        for c in found
    }


async def list_conversations(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    owner = query_text(request, "owner")
    if owner is not None and owner not in OWNERS:
        raise BadRequest(f"owner must be one of {', '.join(OWNERS)}", code="invalid_query")
    alert = await _waiting_alert(request)
    async with request.app[SESSIONS]() as session:
        found = await inbox_rows.filtered(
            session,
            await conversations.list_conversations(session, owner=owner),
            inbox_rows.ListFilters.of(request),
        )
        held = await service_window.held_since_last_inbound(session, found)
        names = await _names(session, found)
        details = await inbox_rows.row_details(session, found)
        state = await _inbox_state(session, found, who)
    return web.json_response(
        {
            "conversations": [
                {**_listed(c, alert, held, names), **details[c.id], **state[c.id]} for c in found
            ]
        }
    )


async def read_conversation(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    alert = await _waiting_alert(request)
    conversation_id = path_id(request, "conversation_id")
    if who is not None:  # an operator opened it: what the customer wrote so far is read
        async with request.app[SESSIONS].begin() as session:
            if await conversations.get(session, conversation_id) is None:
                raise NotFound("no such conversation")
            await assignments.mark_read(session, conversation_id, who)
    async with request.app[SESSIONS]() as session:
        conversation = await conversations.get(session, conversation_id)
        if conversation is None:
            raise NotFound("no such conversation")
        recent = await conversations.recent_messages(session, conversation)
        held = await service_window.held_since_last_inbound(session, [conversation])
        names = await _names(session, [conversation])
        state = await _inbox_state(session, [conversation], who)
    return web.json_response(
        {
            **_listed(conversation, alert, held, names),
            **state[conversation.id],
            "messages": [_message_json(m) for m in recent],
        }
    )


def _counted(request: web.Request, outcome: OwnerChange | Refused) -> OwnerChange | Refused:
    """An operator who takes a conversation from the bot hands it to a person: counted."""
    if (
        isinstance(outcome, OwnerChange)
        and outcome.changed
        and outcome.previous_owner == Owner.BOT
        and outcome.conversation.owner == Owner.HUMAN
    ):
        request.app[METRICS].handoffs.labels(reason=HandoffReason.TAKEOVER).inc()
    return outcome


def _changed(outcome: OwnerChange | Refused) -> web.Response:
    if isinstance(outcome, Refused):
        raise Conflict(outcome.detail, code=outcome.code)
    return web.json_response(
        {**conversation_json(outcome.conversation), "previous_owner": outcome.previous_owner}
    )


async def handoff(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, HandoffIn)
    actor = who or body.actor
    settings = request.app[SETTINGS]
    secret = settings.webchat_secret.get_secret_value() if settings.webchat_secret else None
    async with request.app[SESSIONS].begin() as session:
        tenant_ref = tenant_of(request)
        tenant = await tenants.settings_for(session, tenant_ref, channel=body.channel)
        try:
            identity = await identify(
                session,
                channel_catalog.entry(body.channel).evidence(
                    claim_for_identity(body.channel, body.external_id), secret
                ),
                text="",
                tenant=tenant,
                region=settings.default_region,
            )
        except InvalidIdentifier as exc:
            raise BadRequest(f"external_id: {exc}", code="invalid_identity") from exc
        key = conversation_key(identity.customer_id, body.channel)
        # The conversation is kept from the customer's first message; an operator may also
        # take one before that.
        noted = await conversations.note_messages(
            session,
            [
                MessageSeen(
                    key,
                    identity.customer_id,
                    body.channel,
                    identity.identity_id,
                    identity.key.identifier.value,
                    utcnow(),
                    tenant=tenant_ref,
                )
            ],
        )
        outcome = await change_owner(
            session,
            request.app[EVENTS],
            noted[key].id,
            Took(actor),
            actor=actor,
            reason=body.reason,
        )
        if isinstance(outcome, Refused):
            raise Conflict(outcome.detail, code=outcome.code)
    return _changed(_counted(request, outcome))


async def _by_id(request: web.Request, event: Took | HandedBack, reason: str) -> web.Response:
    return _changed(_counted(request, await _change_by_id(request, event, reason)))


async def _change_by_id(
    request: web.Request, event: Took | HandedBack, reason: str
) -> OwnerChange | Refused:
    async with request.app[SESSIONS].begin() as session:
        try:
            outcome = await change_owner(
                session,
                request.app[EVENTS],
                path_id(request, "conversation_id"),
                event,
                actor=event.actor,
                reason=reason,
            )
        except ConversationNotFound as exc:
            raise NotFound("no such conversation") from exc
    return outcome


async def take(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, Decision)
    return await _by_id(request, Took(who or body.actor), body.reason)


async def handback(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, Decision)
    actor = who or body.actor
    outcome = await _change_by_id(request, HandedBack(actor), body.reason)
    response = _changed(outcome)
    if isinstance(outcome, OwnerChange) and outcome.changed:
        # The tenant may ask the customer what they thought (`gateway.csat`).
        await ask_after_handback(
            sessions=request.app[SESSIONS],
            counter=request.app[COUNTER],
            events=request.app[EVENTS],
            deliverer=request.app[DELIVER],
            conversation_id=outcome.conversation.id,
            operator=actor,
        )
    return response


async def write(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, OperatorMessageIn)
    if not body.text.strip() and not body.media:
        raise BadRequest("text must not be empty without media", code="empty_text")
    media = await vetted_media(request.app[FETCHER], body.media)
    with operator_send_answers():
        message = await send_operator_message(
            sessions=request.app[SESSIONS],
            counter=request.app[COUNTER],
            events=request.app[EVENTS],
            deliverer=request.app[DELIVER],
            conversation_id=path_id(request, "conversation_id"),
            text=body.text,
            actor=who or body.actor,
            media=media,
        )
    return web.json_response({"message_id": message.id}, status=202)


document(
    "GET",
    "/v1/operator/conversations",
    "Conversations and who answers them: waiting ones first (oldest first), then those "
    "operators hold, then the bot's (latest message first); `?owner=` keeps one kind, "
    "`?channel=` one channel, `?tenant=` one tenant, `?q=` those with a message containing "
    "the text. Each has its name, last message (`preview`), link level and tenant",
    parameters=[
        {
            "name": "owner",
            "in": "query",
            "required": False,
            "schema": {"type": "string", "enum": list(OWNERS)},
        },
        *(
            {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
            for name in ("channel", "tenant", "q")
        ),
    ],
    responses={200: "conversations", 400: "unknown owner"},
)
document(
    "GET",
    "/v1/operator/conversations/{conversation_id}",
    "A conversation and its customer's recent messages on every channel (author, delivery)",
    parameters=conversation_path(),
    responses={200: "conversation and messages", 404: "no such conversation"},
)
document(
    "POST",
    "/v1/operator/conversations/handoff",
    "Take the conversation of a channel identity: the bot stops answering it",
    body=HandoffIn,
    responses={
        200: "the conversation, held by the actor",
        400: "malformed body or identity",
        409: "held by another operator",
    },
)
document(
    "POST",
    "/v1/operator/conversations/{conversation_id}/take",
    "Take a conversation (waiting or the bot's): the bot stops answering it",
    body=Decision,
    parameters=conversation_path(),
    responses={
        200: "the conversation, held by the actor",
        404: "no such conversation",
        409: "held by another operator",
    },
)
document(
    "POST",
    "/v1/operator/conversations/{conversation_id}/messages",
    "Write to the customer on their channel as the operator holding the conversation",
    body=OperatorMessageIn,
    parameters=conversation_path(),
    responses={
        202: "stored; being sent",
        400: "empty text and no media, or a media URL that is not http(s)",
        404: "no such conversation",
        409: "the actor does not hold it, or the customer never wrote",
        422: "a media URL no fetch may reach (`attachment_refused`: an internal address)",
    },
)
document(
    "POST",
    "/v1/operator/conversations/{conversation_id}/handback",
    "Hand a conversation back to the bot",
    body=Decision,
    parameters=conversation_path(),
    responses={200: "the conversation", 404: "no such conversation", 409: "held by another"},
)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/operator/conversations", list_conversations)
    app.router.add_post("/v1/operator/conversations/handoff", handoff)
    app.router.add_get("/v1/operator/conversations/{conversation_id}", read_conversation)
    app.router.add_post("/v1/operator/conversations/{conversation_id}/take", take)
    app.router.add_post("/v1/operator/conversations/{conversation_id}/messages", write)
    app.router.add_post("/v1/operator/conversations/{conversation_id}/handback", handback)
    conversation_assignment.add_routes(app)

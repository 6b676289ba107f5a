"""Web chat: `POST /webchat/visitors`, REST `/webchat/messages` and the websocket `/webchat/ws`.

A visitor id is issued by the server (`POST /webchat/visitors` → `{"visitor_id": str}`, signed,
see `gateway.webchat.visitors`); who may read a thread is in `gateway.webchat.access`.

Websocket protocol (JSON text frames):

    → {"type": "hello", "visitor_id": str, "identity_token": str | null, "after": str | null}
    ← {"type": "ready", "visitor_id": str}
    ← or {"type": "error", "error": "invalid_visitor_id" | "identity_required" |
      "identity_mismatch", "detail": str}, then the socket is closed (code 1008): the visitor id
      was not issued here, or the thread needs its account's identity token
    ← {"type": "message", "message_id": str, "role": "user" | "assistant", "text": str,
      "created_at": str, "client_message_id": str | null, "author": "customer" | "bot" |
      "operator", "author_name": str | null, "media"?: [...], "citations"?: [{"number": int,
      "title": str, "url": str | null}]} for every stored message of the thread after `after`
      (`author_name`: the operator's, on an operator's message; `citations`: the documents a
      reply's `[n]` cite, only on a reply citing the knowledge base)
    → {"type": "message", "text": str, "client_message_id": str}
    ← {"type": "ack", "client_message_id": str, "message_id": str, "duplicate": bool}
    ← {"type": "typing", "reply_to": str} while a reply to that client_message_id is being
      written, again every few seconds (the widget shows it ~8 s after the last one)
    ← {"type": "partial", "reply_to": str, "text": str} the reply so far (the whole text,
      which may be shorter than the previous partial's); never stored
    ← {"type": "message", "role": "assistant", "reply_to": str | null, ...} when the reply is
      stored; it replaces the partial of the same reply_to (replayed stored messages, here or
      from `GET /webchat/messages`, carry no reply_to: only stored messages are ever replayed)
    ← {"type": "error", "error": code, "detail": str} for a bad frame (the socket stays open)
    ← {"type": "error", "error": "rate_limited", "detail": str, "retry_after_s": int} for a text
      frame past the visitor's rate limit (the tenant's `webchat_frames_per_visitor`): the
      frame is not read, a message in it not stored (the socket stays open; resend it later)

A resent `client_message_id` (after a reconnect) is acknowledged again and stored once; one
whose message was erased meanwhile gets an error frame `message_erased` (REST: 409).

Rate limits (`gateway.rate_limits`, the tenant's `rate_limits`): new visitor ids per client
address, REST messages per visitor (429 with `Retry-After` past them) and frames per visitor.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import WSCloseCode, WSMessage, WSMsgType, web
from pydantic import BaseModel, ConfigDict, Field

from channels.base import PayloadInvalid, RawRequest
from channels.webchat import (
    CLIENT_MESSAGE_ID,
    MAX_TEXT_CHARS,
    VISITOR_ID,
    bearer_token,
    message_from,
    visitor_id_of,
)
from gateway.http.client_address import client_of
from gateway.http.errors import BadRequest, GatewayError
from gateway.http.openapi import document
from gateway.http.refusals import Refusal, log_refusal, reason_of_code
from gateway.http.tenant import tenant_of
from gateway.keys import ACCEPT, ADAPTERS, HUB, SCHEDULER, SESSIONS
from gateway.rate_limits.doors import Door, check, enforce
from gateway.rate_limits.limiter import Verdict
from gateway.runtime.clock import utcnow
from gateway.storage.message_meta import operator_of
from gateway.storage.records import MessageRecord
from gateway.storage.repositories import messages
from gateway.turns.accept import MessageErased
from gateway.webchat.access import require_reader, require_signed, thread_key
from gateway.webchat.frames import (
    Author,
    Hello,
    check_storable,
    check_token,
    read_cursor,
    read_frame,
    read_hello,
)
from gateway.webchat.hub import message_frame
from gateway.webchat.visitors import VISITORS, visitor_ids_ctx

MAX_FRAME_BYTES = 64 * 1024


def frame_of(record: MessageRecord) -> dict[str, Any]:
    return message_frame(
        record.id,
        record.role,
        record.text,
        record.created_at.isoformat(),
        record.meta.client_message_id if record.role == "user" else None,
        record.media,
        author=Author.of(record.role, operator_of(record.meta)),
        citations=record.meta.citations,
    )


async def post_message(request: web.Request) -> web.Response:
    body = await request.read()
    raw = RawRequest(request.method, str(request.url), dict(request.headers), body)
    channel = request.app[ADAPTERS]["webchat"]
    channel.verify(raw)
    check_token(bearer_token(raw.headers))
    try:
        [inbound] = channel.parse(raw).messages
    except (ValueError, RecursionError) as exc:  # a 5000-digit number; "[[[[…" nested deep
        raise PayloadInvalid(f"body is not usable JSON: {exc}") from exc
    check_storable(inbound.text)
    require_signed(request.app, inbound.sender)
    await enforce(request, Door.WEBCHAT_MESSAGES, inbound.sender, channel="webchat")
    accepted = await request.app[ACCEPT].accept(inbound, tenant=tenant_of(request))
    if not accepted.duplicate:
        request.app[SCHEDULER].kick(accepted.conversation_key)
    return web.json_response(
        {"message_id": str(accepted.message_id), "duplicate": accepted.duplicate}, status=202
    )


async def get_messages(request: web.Request) -> web.Response:
    try:
        visitor = visitor_id_of(dict(request.query))
    except PayloadInvalid as exc:
        raise BadRequest(str(exc), code="invalid_query") from exc
    after = read_cursor(request.query.get("after"))
    token = bearer_token(dict(request.headers))
    check_token(token)
    await require_reader(request.app, visitor, token)
    async with request.app[SESSIONS]() as session:
        found = await messages.thread_messages(session, thread_key(visitor), after_id=after)
    return web.json_response({"messages": [frame_of(m) for m in found]})


async def post_visitor(request: web.Request) -> web.Response:
    await enforce(request, Door.VISITOR_IDS, client_of(request).address, channel="webchat")
    return web.json_response({"visitor_id": request.app[VISITORS].issue()}, status=201)


async def websocket(request: web.Request) -> web.WebSocketResponse:
    socket = web.WebSocketResponse(heartbeat=30, max_msg_size=MAX_FRAME_BYTES)
    await socket.prepare(request)
    hub = request.app[HUB]
    visitor: str | None = None
    token: str | None = None
    try:
        async for frame in socket:
            if frame.type != WSMsgType.TEXT:
                _log_unread(request, frame)
                continue
            if visitor is not None:
                verdict = await check(request, Door.WEBCHAT_FRAMES, visitor, channel="webchat")
                if not verdict.allowed:
                    await _too_many(request, socket, verdict)
                    continue
            try:
                data = read_frame(frame.data)
                if visitor is None:
                    hello = read_hello(data)
                    try:
                        await require_reader(request.app, hello.visitor_id, hello.identity_token)
                    except GatewayError as refused:
                        await _refuse(request, socket, refused)
                        break
                    visitor, token, cursor = await _hello(socket, hello)
                    # Join the hub before reading the backlog, so a reply stored meanwhile
                    # arrives live (the widget dedupes by message id) rather than never.
                    hub.add(visitor, socket)
                    await _backlog(request, socket, visitor, cursor)
                elif data.get("type") == "message":
                    await _message(request, socket, data, visitor, token)
                else:
                    raise PayloadInvalid(f"unknown frame type {data.get('type')!r}")
            except (PayloadInvalid, json.JSONDecodeError, BadRequest) as exc:
                log_refusal(request, Refusal("bad_frame", str(exc)), frame="text")
                await socket.send_json({"type": "error", "error": "bad_frame", "detail": str(exc)})
            except MessageErased as exc:  # a resent message whose first copy was erased
                await socket.send_json({"type": "error", "error": exc.code, "detail": exc.detail})
    finally:
        if visitor is not None:
            hub.remove(visitor, socket)
    return socket


def _log_unread(request: web.Request, frame: WSMessage) -> None:
    """A frame the protocol does not read: binary, or one aiohttp refused (too big, bad
    UTF-8: then the socket closes); close frames end the loop before they get here."""
    detail = str(frame.data) if frame.type == WSMsgType.ERROR else "not a text frame"
    log_refusal(request, Refusal("bad_frame", detail), frame=frame.type.name.lower())


async def _refuse(
    request: web.Request, socket: web.WebSocketResponse, refused: GatewayError
) -> None:
    log_refusal(request, Refusal(reason_of_code(refused.code), refused.detail), frame="hello")
    await socket.send_json({"type": "error", "error": refused.code, "detail": refused.detail})
    await socket.close(code=WSCloseCode.POLICY_VIOLATION, message=refused.code.encode())


async def _too_many(request: web.Request, socket: web.WebSocketResponse, verdict: Verdict) -> None:
    """The answer to a frame past the limit, in its place (the widget matches answers to its
    message frames in order)."""
    detail = f"too many frames from this visitor; retry in {verdict.retry_after_s} s"
    log_refusal(request, Refusal("rate_limited", detail), frame="text")
    await socket.send_json(
        {
            "type": "error",
            "error": "rate_limited",
            "detail": detail,
            "retry_after_s": verdict.retry_after_s,
        }
    )


async def _hello(socket: web.WebSocketResponse, hello: Hello) -> tuple[str, str | None, int | None]:
    await socket.send_json({"type": "ready", "visitor_id": hello.visitor_id})
    return hello.visitor_id, hello.identity_token, hello.after


async def _backlog(
    request: web.Request, socket: web.WebSocketResponse, visitor: str, cursor: int | None
) -> None:
    async with request.app[SESSIONS]() as session:
        backlog = await messages.thread_messages(
            session, thread_key(visitor), after_id=cursor, limit=500
        )
    for record in backlog:
        await socket.send_json(frame_of(record))


async def _message(
    request: web.Request,
    socket: web.WebSocketResponse,
    data: dict[str, Any],
    visitor: str,
    token: str | None,
) -> None:
    inbound = message_from(data, visitor_id=visitor, token=token, received_at=utcnow())
    check_storable(inbound.text)
    accepted = await request.app[ACCEPT].accept(inbound, tenant=tenant_of(request))
    client_id = inbound.client_message_id
    await socket.send_json(
        {
            "type": "ack",
            "client_message_id": client_id,
            "message_id": str(accepted.message_id),
            "duplicate": accepted.duplicate,
        }
    )
    if not accepted.duplicate:
        request.app[SCHEDULER].kick(accepted.conversation_key)


class WebChatMessageIn(BaseModel):
    """The REST body as documented; `channels.webchat` checks it, with these same patterns."""

    model_config = ConfigDict(extra="allow")

    visitor_id: str = Field(pattern=VISITOR_ID.pattern)
    # At least one character that is not white space.
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=r"\S")
    client_message_id: str = Field(pattern=CLIENT_MESSAGE_ID.pattern)


document(
    "POST",
    "/webchat/messages",
    "Send a web chat message (REST fallback of the websocket); an optional "
    "`Authorization: Bearer <identity token>` says who the visitor is",
    secured=False,
    body=WebChatMessageIn,
    responses={
        202: "stored; the reply arrives on the websocket or by polling",
        400: "malformed",
        403: "visitor_id not issued by this server",
        409: "message_erased: this client_message_id's message was erased",
        429: "too many messages from this visitor (`Retry-After` says when to resend)",
    },
)
document(
    "GET",
    "/webchat/messages",
    "Messages of a visitor's thread after a cursor; a thread a signed-in account wrote in also "
    "needs that account's `Authorization: Bearer <identity token>`",
    secured=False,
    parameters=[
        {
            "name": "visitor_id",
            "in": "query",
            "required": True,
            "schema": {"type": "string", "pattern": VISITOR_ID.pattern},
        },
        {
            "name": "after",
            "in": "query",
            "required": False,
            "schema": {"type": "string", "pattern": "^([0-9]{1,18}|null)?$"},
        },
    ],
    responses={
        200: "messages, each with `author` (customer, bot or operator) and `author_name` "
        "(the operator's name on an operator's message, else null)",
        400: "malformed query",
        401: "the thread was written by a signed-in account: its identity token is needed",
        403: "visitor_id not issued by this server, or another account's identity token",
    },
)


document(
    "POST",
    "/webchat/visitors",
    "A new, server-signed visitor id: the widget keeps it and sends it with every message, "
    "poll and websocket hello (an id not issued here is refused with 403)",
    secured=False,
    responses={
        201: "the visitor id",
        429: "too many new visitor ids from this address (`Retry-After` says when to ask again)",
    },
)


def add_routes(app: web.Application) -> None:
    app.cleanup_ctx.append(visitor_ids_ctx)
    app.router.add_post("/webchat/visitors", post_visitor)
    app.router.add_post("/webchat/messages", post_message)
    app.router.add_get("/webchat/messages", get_messages)
    app.router.add_get("/webchat/ws", websocket)

"""`/v1/operator/conversations/{id}/notes`: operators' internal notes on a conversation.

A note is written by any operator (holding the conversation or not), audited in the same
transaction, and shown to operators only: it is stored apart from the messages (see
`models_notes`), so no sender and no window ever reads it.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from gateway.api.operator_sends import conversation_path
from gateway.http.bodies import path_id, read_json
from gateway.http.errors import NotFound
from gateway.http.openapi import document
from gateway.keys import SESSIONS
from gateway.operators.actor import operator_actor
from gateway.storage.repositories import audit, conversations, notes
from gateway.storage.repositories.notes import NoteRecord
from gateway.turns.handoff import AUDIT_SUBJECT


class NoteIn(BaseModel):
    """An internal note: operators read it, the customer and the model never do."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=4000)
    actor: str = Field("api", min_length=1, max_length=200)


def note_json(note: NoteRecord) -> dict[str, Any]:
    return {
        "id": note.id,
        "author": note.author,
        "text": note.text,
        "created_at": note.created_at.isoformat(),
    }


async def write_note(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, NoteIn)
    actor = who or body.actor
    conversation_id = path_id(request, "conversation_id")
    async with request.app[SESSIONS].begin() as session:
        if await conversations.get(session, conversation_id) is None:
            raise NotFound("no such conversation")
        note = await notes.add_note(
            session, conversation_id=conversation_id, author=actor, text=body.text
        )
        await audit.record_audit(
            session,
            actor=actor,
            action="conversation.note",
            reason="an internal note",
            subject_type=AUDIT_SUBJECT,
            subject_id=conversation_id,
            details={"note_id": note.id},
        )
    return web.json_response(note_json(note), status=201)


async def read_notes(request: web.Request) -> web.Response:
    await operator_actor(request)
    conversation_id = path_id(request, "conversation_id")
    async with request.app[SESSIONS]() as session:
        if await conversations.get(session, conversation_id) is None:
            raise NotFound("no such conversation")
        found = await notes.list_notes(session, conversation_id)
    return web.json_response({"notes": [note_json(note) for note in found]})


document(
    "POST",
    "/v1/operator/conversations/{conversation_id}/notes",
    "Write an internal note on a conversation: shown to operators only, never sent to the "
    "customer, never in the model's window (audited)",
    body=NoteIn,
    parameters=conversation_path(),
    responses={201: "the note", 404: "no such conversation"},
)
document(
    "GET",
    "/v1/operator/conversations/{conversation_id}/notes",
    "A conversation's internal notes, oldest first",
    parameters=conversation_path(),
    responses={200: "the notes", 404: "no such conversation"},
)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/operator/conversations/{conversation_id}/notes", read_notes)
    app.router.add_post("/v1/operator/conversations/{conversation_id}/notes", write_note)

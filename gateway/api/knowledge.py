"""`/v1/knowledge/documents`: a tenant's knowledge base, added to, listed, read and pruned by
operators (the API key, or a console login with its CSRF token on writes).

A document is read into chunks when it arrives (Markdown, HTML, PDF or plain text), stored
with them and audited in one transaction; posting a document at a URL the tenant already has
replaces that one, and so does `PUT` by id. Replacing or deleting a document tells every
process to drop its cached chunks (`gateway.knowledge.forgetting`).
"""

from __future__ import annotations

from typing import Any, Final

from aiohttp import web

from gateway.api.knowledge_bodies import DocumentIn, raw_body_parameters, read_upload
from gateway.http.bodies import path_id, query_text
from gateway.http.errors import Conflict, NotFound, PayloadTooLarge, Unprocessable
from gateway.http.openapi import document
from gateway.http.tenant import tenant_of
from gateway.keys import COUNTER, REDIS, SESSIONS
from gateway.knowledge.documents import (
    DocumentTooLarge,
    UrlTaken,
    add_document,
    remove_document,
)
from gateway.knowledge.forgetting import DocumentsForgotten, KnowledgeForgetting, publish_forgotten
from gateway.knowledge.parsing import DocumentUnreadable
from gateway.operators.actor import operator_actor
from gateway.storage.repositories import knowledge
from gateway.storage.repositories.knowledge import DocumentRecord, StoredChunk

# Set by the flow once a process listens for forgetting; without it, a change is still
# published to the other processes.
KNOWLEDGE_FORGETTING: Final = web.AppKey("knowledge_forgetting", KnowledgeForgetting)

DOCUMENTS = "/v1/knowledge/documents"
ONE_DOCUMENT = "/v1/knowledge/documents/{document_id}"


def document_json(found: DocumentRecord) -> dict[str, Any]:
    def when(value: Any) -> str | None:
        return None if value is None else value.isoformat()

    return {
        "id": found.id,
        "title": found.title,
        "url": found.source_url,
        "format": found.format,
        "audience": found.audience.value,
        "content_hash": found.content_hash,
        "etag": found.etag,
        "last_modified": when(found.last_modified),
        "updated_at": when(found.updated_at),
        "synced_at": when(found.synced_at),
        "sync_error": found.sync_error,
        "created_at": when(found.created_at),
        "chunk_count": found.chunk_count,
    }


def chunk_json(chunk: StoredChunk) -> dict[str, Any]:
    return {
        "position": chunk.position,
        "headings": list(chunk.headings),
        "text": chunk.text,
        "token_count": chunk.token_count,
    }


def _tenant(request: web.Request) -> str:
    return tenant_of(request).encode()


async def _announce(request: web.Request, forgotten: DocumentsForgotten) -> None:
    forgetting = request.app.get(KNOWLEDGE_FORGETTING)
    if forgetting is not None:
        await forgetting.announce(forgotten)
    else:
        await publish_forgotten(request.app.get(REDIS), forgotten)


async def _store(request: web.Request, *, document_id: str | None) -> web.Response:
    who = await operator_actor(request, admin_only=True)  # what the bot tells: admins
    upload, named_actor = await read_upload(request)
    try:
        stored = await add_document(
            request.app[SESSIONS],
            upload,
            tenant=_tenant(request),
            actor=who or named_actor,
            announce=lambda forgotten: _announce(request, forgotten),
            counter=request.app.get(COUNTER),
            document_id=document_id,
        )
    except DocumentTooLarge as exc:
        raise PayloadTooLarge(str(exc), code="document_too_large") from exc
    except DocumentUnreadable as exc:
        raise Unprocessable(str(exc), code="document_unreadable") from exc
    except LookupError as exc:
        raise NotFound("no such document") from exc
    except UrlTaken as exc:
        raise Conflict(str(exc), code="url_taken") from exc
    body = {**document_json(stored.document), "outcome": stored.outcome}
    return web.json_response(body, status=201 if stored.outcome == "added" else 200)


async def add(request: web.Request) -> web.Response:
    return await _store(request, document_id=None)


async def replace(request: web.Request) -> web.Response:
    return await _store(request, document_id=path_id(request, "document_id"))


async def list_all(request: web.Request) -> web.Response:
    await operator_actor(request)
    async with request.app[SESSIONS]() as session:
        found = await knowledge.list_documents(session, _tenant(request))
    return web.json_response({"documents": [document_json(d) for d in found]})


async def read_one(request: web.Request) -> web.Response:
    await operator_actor(request)
    document_id = path_id(request, "document_id")
    async with request.app[SESSIONS]() as session:
        found = await knowledge.get_document(session, _tenant(request), document_id)
        if found is None:
            raise NotFound("no such document")
        chunks = await knowledge.document_chunks(session, found)
    return web.json_response({**document_json(found), "chunks": [chunk_json(c) for c in chunks]})


async def delete(request: web.Request) -> web.Response:
    who = await operator_actor(request, admin_only=True)  # what the bot tells: admins
    gone = await remove_document(
        request.app[SESSIONS],
        tenant=_tenant(request),
        document_id=path_id(request, "document_id"),
        actor=who or query_text(request, "actor") or "api",
        announce=lambda forgotten: _announce(request, forgotten),
    )
    if gone is None:
        raise NotFound("no such document")
    return web.Response(status=204)


_ID = [{"name": "document_id", "in": "path", "required": True, "schema": {"type": "string"}}]
_STORE_RESPONSES = {
    400: "an unknown audience, no content or both, content_base64 that is not base64",
    409: "another document of the tenant has this url",
    413: "a document over 4 MiB",
    415: "a body that is neither JSON nor a document's Content-Type",
    422: "a document that is not of its format, or has no text",
}
document(
    "POST",
    DOCUMENTS,
    "Add a document to the tenant's knowledge base (JSON, or the document itself as the body "
    "with Content-Type text/markdown, text/html, application/pdf or text/plain and the query "
    "naming the rest); one at a URL the tenant already has replaces it (audited)",
    body=DocumentIn,
    parameters=raw_body_parameters(),
    responses={201: "the document added", 200: "the document replaced or unchanged"}
    | _STORE_RESPONSES,
)
document("GET", DOCUMENTS, "The tenant's documents", responses={200: "the documents"})
document(
    "GET",
    ONE_DOCUMENT,
    "One document with its chunks",
    parameters=_ID,
    responses={200: "the document and its chunks", 404: "no such document"},
)
document(
    "PUT",
    ONE_DOCUMENT,
    "Replace a document: its chunks are read again and replaced at once (audited)",
    body=DocumentIn,
    parameters=_ID + raw_body_parameters(),
    responses={200: "the document replaced or unchanged", 404: "no such document"}
    | _STORE_RESPONSES,
)
document(
    "DELETE",
    ONE_DOCUMENT,
    "Delete a document and its chunks; every process forgets them (audited)",
    parameters=_ID,
    responses={204: "deleted", 404: "no such document"},
)


def add_routes(app: web.Application) -> None:
    app.router.add_post(DOCUMENTS, add)
    app.router.add_get(DOCUMENTS, list_all)
    app.router.add_get(ONE_DOCUMENT, read_one)
    app.router.add_put(ONE_DOCUMENT, replace)
    app.router.add_delete(ONE_DOCUMENT, delete)

"""`/v1/knowledge/documents`: a tenant's knowledge base, added to, listed, read and pruned by
operators (the API key, or a console login with its CSRF token on writes).

A document is read into chunks when it arrives (Markdown, HTML, PDF or plain text), stored
with them and audited in one transaction; posting a document at a URL the tenant already has
replaces that one, and so does `PUT` by id. Replacing or deleting a document tells every
process to drop its cached chunks (`gateway.knowledge.forgetting`).

`POST /v1/knowledge/urls` adds the page at a URL, or each page of a sitemap, fetched through
the safe fetcher; `POST /v1/knowledge/documents/{id}/sync` reads a URL document again now
(`gateway.knowledge.sync`).
"""

from __future__ import annotations

from typing import Any, Final

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from gateway.api.knowledge_bodies import DocumentIn, raw_body_parameters, read_upload
from gateway.http.bodies import path_id, query_text, read_json
from gateway.http.errors import BadRequest, Conflict, NotFound, PayloadTooLarge, Unprocessable
from gateway.http.openapi import document
from gateway.http.tenant import tenant_of
from gateway.keys import COUNTER, FETCHER, REDIS, SESSIONS
from gateway.knowledge.documents import (
    DocumentTooLarge,
    UrlTaken,
    add_document,
    remove_document,
)
from gateway.knowledge.forgetting import DocumentsForgotten, KnowledgeForgetting, publish_forgotten
from gateway.knowledge.parsing import DocumentUnreadable
from gateway.knowledge.sync import KnowledgeSync, NotASitemap, Synced
from gateway.operators.actor import operator_actor
from gateway.storage.models_knowledge import URL_LENGTH
from gateway.storage.repositories import knowledge
from gateway.storage.repositories.knowledge import DocumentRecord, StoredChunk
from identity.audience import Audience

# Set by the flow once a process listens for forgetting; without it, a change is still
# published to the other processes.
KNOWLEDGE_FORGETTING: Final = web.AppKey("knowledge_forgetting", KnowledgeForgetting)

DOCUMENTS = "/v1/knowledge/documents"
ONE_DOCUMENT = "/v1/knowledge/documents/{document_id}"
SYNC_DOCUMENT = "/v1/knowledge/documents/{document_id}/sync"
URLS = "/v1/knowledge/urls"


class UrlIn(BaseModel):
    """A page or a sitemap to fetch into the knowledge base, and who may be told it."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(max_length=URL_LENGTH, pattern=r"^https?://\S+$")
    audience: str = Field(description="who may be told it: public, customers, verified, operators")
    sitemap: bool = Field(False, description="refuse the URL unless it is a sitemap")
    actor: str = Field("api", min_length=1, max_length=200)


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


def knowledge_sync(request: web.Request) -> KnowledgeSync:
    """URL documents fetched through the app's safe fetcher, forgotten as uploads are."""
    return KnowledgeSync(
        request.app[SESSIONS],
        request.app[FETCHER],
        lambda forgotten: _announce(request, forgotten),
        request.app.get(COUNTER),
    )


def synced_json(synced: Synced) -> dict[str, Any]:
    document_ = None if synced.document is None else document_json(synced.document)
    return {
        "url": synced.url,
        "outcome": synced.outcome,
        "error": synced.error,
        "document": document_,
    }


async def add_url(request: web.Request) -> web.Response:
    who = await operator_actor(request, admin_only=True)  # what the bot tells: admins
    asked = await read_json(request, UrlIn)
    try:
        audience = Audience.parse(asked.audience)
    except ValueError as exc:
        raise BadRequest(str(exc), code="unknown_audience") from exc
    try:
        added = await knowledge_sync(request).add_url(
            tenant=_tenant(request),
            url=asked.url,
            audience=audience,
            actor=who or asked.actor,
            sitemap=asked.sitemap,
        )
    except NotASitemap as exc:
        raise Unprocessable(str(exc), code="not_a_sitemap") from exc
    if not added.sitemap and added.pages[0].document is None:
        raise Unprocessable(added.pages[0].error or "unreadable", code="url_unreadable")
    body = {
        "url": added.url,
        "sitemap": added.sitemap,
        "skipped": added.skipped,
        "pages": [synced_json(page) for page in added.pages],
    }
    fresh = any(page.outcome == "added" for page in added.pages)
    return web.json_response(body, status=201 if fresh else 200)


async def sync_now(request: web.Request) -> web.Response:
    who = await operator_actor(request, admin_only=True)  # what the bot tells: admins
    try:
        synced = await knowledge_sync(request).sync_document(
            tenant=_tenant(request),
            document_id=path_id(request, "document_id"),
            actor=who or query_text(request, "actor") or "api",
        )
    except LookupError as exc:
        raise Unprocessable(str(exc), code="not_a_url_document") from exc
    if synced is None:
        raise NotFound("no such document")
    return web.json_response(synced_json(synced))


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


document(
    "POST",
    URLS,
    "Fetch the page at a URL into the tenant's knowledge base (Markdown, HTML, PDF or plain "
    "text, by its Content-Type), or each page a sitemap there lists on its host (at most 500; "
    "a sitemap index one level deep); a page the tenant already has is re-synced (audited)",
    body=UrlIn,
    responses={
        201: "a page added (each page's outcome listed)",
        200: "the pages re-synced, replaced or unchanged",
        400: "an unknown audience, a URL that is not http(s)",
        422: "a page that could not be fetched or read, or a sitemap asked for and not found",
    },
)
document(
    "POST",
    SYNC_DOCUMENT,
    "Read a URL document again now: a conditional fetch (ETag, Last-Modified); new bytes "
    "replace its chunks, a failure is noted on it and its chunks stay",
    parameters=_ID,
    responses={
        200: "the outcome: replaced, unchanged, not_modified or failed (with its error)",
        404: "no such document",
        422: "the document was uploaded, not fetched from a URL",
    },
)


def add_routes(app: web.Application) -> None:
    app.router.add_post(DOCUMENTS, add)
    app.router.add_post(URLS, add_url)
    app.router.add_post(SYNC_DOCUMENT, sync_now)
    app.router.add_get(DOCUMENTS, list_all)
    app.router.add_get(ONE_DOCUMENT, read_one)
    app.router.add_put(ONE_DOCUMENT, replace)
    app.router.add_delete(ONE_DOCUMENT, delete)

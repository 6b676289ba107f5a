"""What `/v1/knowledge/documents` reads: a JSON body (the text, or any format in base64) or the
document itself as the body, its Content-Type naming the format and the query the rest; both
become one `Upload`, each refusal a 4xx that says what to fix."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any, Literal

from aiohttp import web
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from gateway.http.bodies import query_text, read_json
from gateway.http.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from gateway.knowledge.documents import MAX_DOCUMENT_BYTES, Upload
from gateway.knowledge.parsing import format_of
from gateway.knowledge.records import DocumentFormat
from gateway.storage.models_knowledge import URL_LENGTH
from identity.audience import Audience

JSON_TYPE = "application/json"
RAW_TYPES = ("text/markdown", "text/html", "application/pdf", "text/plain")
AUDIENCES = [a.value for a in Audience]


class DocumentIn(BaseModel):
    """A knowledge document: `content` (Markdown by default) or `content_base64` (any format,
    named by `format`), the audience that may be told it, and optionally its title, source URL
    and date."""

    model_config = ConfigDict(extra="forbid")

    audience: str = Field(description=f"who may be told it: one of {', '.join(AUDIENCES)}")
    title: str | None = Field(None, min_length=1, max_length=500)
    format: Literal["markdown", "html", "pdf", "text"] | None = None
    content: str | None = Field(None, min_length=1)
    content_base64: str | None = Field(None, min_length=1)
    url: str | None = Field(None, max_length=URL_LENGTH, pattern=r"^https?://\S+$")
    updated_at: AwareDatetime | None = None
    actor: str = Field("api", min_length=1, max_length=200)

    @model_validator(mode="after")
    def _one_content(self) -> DocumentIn:
        if (self.content is None) == (self.content_base64 is None):
            raise ValueError("give either content or content_base64")
        if self.content_base64 is not None and self.format is None:
            raise ValueError("content_base64 needs its format")
        return self


def _audience(text: str | None) -> Audience:
    if text is None:
        names = ", ".join(AUDIENCES)
        raise BadRequest(f"audience is required (one of {names})", code="unknown_audience")
    try:
        return Audience.parse(text)
    except ValueError as exc:
        raise BadRequest(str(exc), code="unknown_audience") from exc


def _body_of(document: DocumentIn) -> bytes:
    if document.content is not None:
        return document.content.encode("utf-8")
    try:
        return base64.b64decode(document.content_base64 or "", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest("content_base64 is not base64", code="invalid_body") from exc


def _checked_size(body: bytes) -> bytes:
    if len(body) > MAX_DOCUMENT_BYTES:
        raise PayloadTooLarge(
            f"document of {len(body)} bytes exceeds {MAX_DOCUMENT_BYTES} bytes",
            code="document_too_large",
        )
    if not body:
        raise BadRequest("the document is empty", code="empty_document")
    return body


def _query_date(request: web.Request) -> datetime | None:
    raw = query_text(request, "updated_at")
    if raw is None:
        return None
    try:
        when = datetime.fromisoformat(raw)
    except ValueError as exc:
        raise BadRequest("updated_at is not an ISO 8601 date", code="invalid_query") from exc
    if when.tzinfo is None:
        raise BadRequest("updated_at needs its UTC offset", code="invalid_query")
    return when


def _query_url(request: web.Request) -> str | None:
    url = query_text(request, "url")
    if url is not None and (
        len(url) > URL_LENGTH or not url.startswith(("http://", "https://")) or " " in url
    ):
        raise BadRequest("url must be an http(s) URL", code="invalid_query")
    return url


async def read_upload(request: web.Request) -> tuple[Upload, str]:
    """The request's document and the actor the body or query names (the API key's caller)."""
    media_type = request.content_type
    if media_type == JSON_TYPE:
        document = await read_json(request, DocumentIn)
        fmt: DocumentFormat = document.format or "markdown"
        upload = Upload(
            body=_checked_size(_body_of(document)),
            format=fmt,
            audience=_audience(document.audience),
            title=document.title,
            source_url=document.url,
            updated_at=document.updated_at,
        )
        return upload, document.actor
    raw_format = format_of(media_type, None) if media_type in RAW_TYPES else None
    if raw_format is None:
        raise UnsupportedMediaType(
            f"send JSON or the document as {', '.join(RAW_TYPES)}, not {media_type}"
        )
    upload = Upload(
        body=_checked_size(await request.read()),
        format=raw_format,
        audience=_audience(query_text(request, "audience")),
        title=query_text(request, "title") or None,
        source_url=_query_url(request),
        updated_at=_query_date(request),
    )
    return upload, query_text(request, "actor") or "api"


def raw_body_parameters() -> list[dict[str, Any]]:
    """The query parameters of a raw-body upload, for the OpenAPI document."""
    described = {
        "audience": f"who may be told it (one of {', '.join(AUDIENCES)}); required with a raw body",
        "title": "the document's title (else its own, else none)",
        "url": "where the document lives (one document per URL)",
        "updated_at": "the document's date, ISO 8601 with its offset",
        "actor": "who adds it, with the API key (audited)",
    }
    return [
        {
            "name": name,
            "in": "query",
            "required": False,
            "description": description,
            "schema": {"type": "string"},
        }
        for name, description in described.items()
    ]

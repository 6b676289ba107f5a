"""`POST /v1/transcripts`: finished calls from the call-center pipeline (Bearer API key)."""

from __future__ import annotations

from typing import Any, Literal

from aiohttp import web
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from sqlalchemy.ext.asyncio import AsyncSession

from channels.base import PayloadInvalid
from channels.transcripts import parse_transcript
from gateway.customers.evidence import SenderClaim, phone_caller
from gateway.customers.resolve import identify
from gateway.http.auth import require_api_key
from gateway.http.bodies import read_json
from gateway.http.errors import BadRequest, Conflict, NotFound
from gateway.http.openapi import document
from gateway.http.tenant import tenant_of
from gateway.keys import COUNTER, MEMORY, SESSIONS, SETTINGS
from gateway.memory.queue import CompactionJob
from gateway.storage.repositories import customers, tenants
from gateway.turns.calls import CallOnAnotherCustomer, store_call
from identity import InvalidIdentifier


class TranscriptIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=160)
    caller: str | None = Field(None, max_length=64)
    customer_id: str | None = Field(None, max_length=64)
    started_at: AwareDatetime
    format: Literal["native", "aws_transcribe", "deepgram", "whisper", "assemblyai"]
    customer_speaker: str | None = Field(None, max_length=64)
    transcript: dict[str, Any]


async def post_transcript(request: web.Request) -> web.Response:
    require_api_key(request)
    body = await read_json(request, TranscriptIn)
    try:
        transcript = parse_transcript(
            body.format, body.transcript, customer_speaker=body.customer_speaker
        )
    except PayloadInvalid as exc:
        raise BadRequest(f"transcript: {exc}", code="invalid_transcript") from exc
    customer_text = " ".join(s.text for s in transcript.segments if s.speaker == "customer")
    tenant_ref = tenant_of(request)
    async with request.app[SESSIONS].begin() as session:
        tenant = await tenants.settings_for(session, tenant_ref, channel="phone")
        named = await _named_customer(session, body.customer_id)
        try:
            identity = await identify(
                session,
                phone_caller(
                    SenderClaim(
                        channel="phone",
                        sender=body.caller or "",
                        call_id=body.call_id,
                        customer_id=named,
                    ),
                    None,
                ),
                text=customer_text,
                tenant=tenant,
                region=request.app[SETTINGS].default_region,
            )
        except InvalidIdentifier as exc:
            raise BadRequest(f"caller: {exc}", code="invalid_identity") from exc
        try:
            stored = await store_call(
                session,
                identity=identity,
                call_id=body.call_id,
                started_at=body.started_at,
                transcript=transcript,
                counter=request.app[COUNTER],
                tenant=tenant_ref,
            )
        except CallOnAnotherCustomer as exc:
            raise Conflict(str(exc), code="call_on_another_customer") from exc
    if not stored.unchanged:
        await request.app[MEMORY].queue.enqueue(
            CompactionJob(identity.customer_id, stored.episode_id, "closed")
        )
    return web.json_response(
        {
            "episode_id": stored.episode_id,
            "messages": stored.messages,
            "version": stored.version,
            "customer_id": identity.customer_id,
            "link_level": identity.level.value,
            "customer_confidence": transcript.customer_confidence,
        },
        status=201,
    )


async def _named_customer(session: AsyncSession, customer_id: str | None) -> str | None:
    """The customer the call center named, after any operator merge; a 404 when there is none
    (a call stored on the wrong customer is worse than a refused post)."""
    if customer_id is None or not customer_id.strip():
        return None
    named = await customers.surviving_customer(session, customer_id.strip())
    if named is None:
        raise NotFound(f"customer_id: no customer {customer_id!r}", code="unknown_customer")
    return named


document(
    "POST",
    "/v1/transcripts",
    "Ingest a finished phone call (native, AWS Transcribe, Deepgram, Whisper, AssemblyAI)",
    body=TranscriptIn,
    responses={
        201: "stored as one phone episode",
        400: "malformed",
        404: "customer_id names no customer",
        409: "a re-post of a call stored on another customer",
        413: "too large",
    },
)


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/transcripts", post_transcript)

"""`POST /v1/context`: the window and its budget report, without calling the model."""

from __future__ import annotations

from typing import Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from gateway.customers.resolve import identify
from gateway.http.auth import require_api_key
from gateway.http.bodies import read_json
from gateway.http.errors import BadRequest
from gateway.http.openapi import document
from gateway.keys import COUNTER, PIPELINE, SESSIONS, SETTINGS
from gateway.storage.repositories import tenants
from gateway.turns.window import DialogueTurn, assemble_context
from identity import (
    Evidence,
    InvalidIdentifier,
    PhoneCall,
    TelegramSender,
    WebChatVisitor,
    WhatsAppSender,
    verify_identity_token,
)


class DialogueIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system"]
    content: str


class ContextIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    channel: Literal["whatsapp", "telegram", "webchat", "phone"]
    external_id: str = Field(min_length=1, max_length=320)
    identity_token: str | None = None
    message: str = Field(max_length=1_000_000)
    window: int | None = Field(None, ge=1024, le=2_000_000)
    dialogue: list[DialogueIn] | None = Field(
        None, description="the caller's own history; stands in for the stored current episode"
    )
    campaign_id: str | None = None
    assistant_id: str | None = None


def evidence_for(body: ContextIn, webchat_secret: str | None) -> Evidence:
    """The evidence a caller of `/v1/context` can present for a channel identity."""
    external_id = body.external_id
    if body.channel == "whatsapp":
        return WhatsAppSender(external_id)
    if body.channel == "telegram":
        raw = external_id.removeprefix("telegram:")
        # ASCII digits that fit a 64-bit id ("²".isdigit() is true, and int() refuses it).
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
            raise BadRequest(
                "telegram external_id must be a numeric user id", code="invalid_identity"
            )
        return TelegramSender(int(raw))
    if body.channel == "webchat":
        claims = None
        if body.identity_token and webchat_secret:
            claims = verify_identity_token(body.identity_token, webchat_secret)
        return WebChatVisitor(external_id.removeprefix("web:anon:"), claims)
    return PhoneCall(call_id=f"context:{external_id}", caller=external_id.removeprefix("phone:"))


async def build_context(request: web.Request) -> web.Response:
    require_api_key(request)
    body = await read_json(request, ContextIn)
    settings = request.app[SETTINGS]
    secret = settings.webchat_secret.get_secret_value() if settings.webchat_secret else None
    async with request.app[SESSIONS].begin() as session:
        tenant = await tenants.tenant_settings(
            session, host=request.host, channel=body.channel, assistant_id=body.assistant_id
        )
        try:
            identity = await identify(
                session,
                evidence_for(body, secret),
                text=body.message,
                tenant=tenant,
                region=settings.default_region,
            )
        except InvalidIdentifier as exc:
            raise BadRequest(f"external_id: {exc}", code="invalid_identity") from exc
        assembled = await assemble_context(
            session,
            identity=identity,
            settings=tenant,
            counter=request.app[COUNTER],
            message=body.message,
            window=body.window,
            dialogue=(
                [DialogueTurn(turn.role, turn.content) for turn in body.dialogue]
                if body.dialogue is not None
                else None
            ),
            campaign_id=body.campaign_id,
            recall_cache=request.app[PIPELINE].recall_cache,
        )
    report = assembled.window.report.to_dict()
    if body.dialogue is not None:
        report["dialogue"] = {
            "source": "request",
            "max_input_chars": tenant.max_input_chars,
            "chars_dropped": assembled.dialogue_chars_dropped,
        }
    return web.json_response(
        {
            "customer_id": identity.customer_id,
            "link_level": identity.level.value,
            "allowed_scopes": sorted(identity.allowed_scopes),
            "messages": assembled.window.messages_as_dicts(),
            "report": report,
        }
    )


document(
    "POST",
    "/v1/context",
    "The budgeted window and its report for a channel identity and message",
    body=ContextIn,
    responses={
        200: "window and report",
        400: "malformed body or identity",
        422: "the fixed context exceeds its budget",
    },
)


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/context", build_context)

"""`POST /v1/context`: the window and its budget report, without calling the model."""

from __future__ import annotations

from typing import Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway import channel_catalog
from gateway.customers.evidence import SenderClaim
from gateway.customers.resolve import identify
from gateway.http.auth import require_api_key
from gateway.http.bodies import read_json
from gateway.http.errors import BadRequest
from gateway.http.openapi import document
from gateway.http.tenant import tenant_of
from gateway.keys import COUNTER, KNOWLEDGE, RECALL, SESSIONS, SETTINGS
from gateway.storage.repositories import tenants
from gateway.turns.window import DialogueTurn, assemble_context
from identity import InvalidIdentifier


class DialogueIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system"]
    content: str


class ChannelIdentityIn(BaseModel):
    """A channel identity as a body names it: here, and in a conversation's handoff."""

    model_config = ConfigDict(extra="forbid")

    channel: str = Field(json_schema_extra={"enum": list(channel_catalog.NAMES)})
    external_id: str = Field(min_length=1, max_length=320)

    @field_validator("channel")
    @classmethod
    def _registered(cls, channel: str) -> str:
        if channel not in channel_catalog.BY_NAME:
            raise ValueError(f"channel must be one of {', '.join(channel_catalog.NAMES)}")
        return channel


class ContextIn(ChannelIdentityIn):
    identity_token: str | None = None
    message: str = Field(max_length=1_000_000)
    window: int | None = Field(None, ge=1024, le=2_000_000)
    dialogue: list[DialogueIn] | None = Field(
        None, description="the caller's own history; stands in for the stored current episode"
    )
    campaign_id: str | None = None
    assistant_id: str | None = None


def claim_for(body: ContextIn) -> SenderClaim:
    """What a `/v1/context` caller claims about a channel identity: its external id, with or
    without the channel's prefix, and for web chat the visitor's identity token."""
    return claim_for_identity(body.channel, body.external_id, body.identity_token)


def claim_for_identity(
    channel: str, external_id: str, identity_token: str | None = None
) -> SenderClaim:
    """`claim_for` of a channel and external id (also what an operator names a conversation
    by)."""
    entry = channel_catalog.entry(channel)
    return SenderClaim(
        channel=entry.name,
        sender=external_id.removeprefix(entry.context_prefix),
        identity_token=identity_token,
        call_id=f"context:{external_id}",
    )


async def build_context(request: web.Request) -> web.Response:
    require_api_key(request)
    body = await read_json(request, ContextIn)
    settings = request.app[SETTINGS]
    secret = settings.webchat_secret.get_secret_value() if settings.webchat_secret else None
    async with request.app[SESSIONS].begin() as session:
        tenant = await tenants.settings_for(
            session, tenant_of(request, assistant_id=body.assistant_id), channel=body.channel
        )
        try:
            identity = await identify(
                session,
                channel_catalog.entry(body.channel).evidence(claim_for(body), secret),
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
            recall_cache=request.app[RECALL],
            channel=body.channel,
            knowledge=request.app[KNOWLEDGE].of(tenant_of(request)),
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

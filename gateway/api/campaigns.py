"""`/v1/campaigns`: campaigns whose anchored system messages survive every cut."""

from __future__ import annotations

from datetime import date
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.http.auth import require_api_key
from gateway.http.bodies import path_id, read_json
from gateway.http.errors import NotFound
from gateway.http.openapi import document
from gateway.keys import SESSIONS
from gateway.storage.errors import RecordNotFound
from gateway.storage.records import CampaignRecord
from gateway.storage.repositories import campaigns


class CampaignIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    messages: list[str] = Field(min_length=1, max_length=50)
    variables: dict[str, str] = Field(default_factory=dict)
    expire_at: date | None = None

    @field_validator("expire_at", mode="before")
    @classmethod
    def _iso_date_only(cls, value: object) -> object:
        # The schema says an ISO date: a number would otherwise be read as a Unix time.
        if value is not None and not isinstance(value, str):
            raise ValueError("expire_at must be an ISO date (YYYY-MM-DD) or null")
        return value


def campaign_json(record: CampaignRecord, today: date) -> dict[str, Any]:
    return {
        "id": record.id,
        "name": record.name,
        "variables": record.variables,
        "expire_at": record.expire_at.isoformat() if record.expire_at else None,
        "deleted": record.deleted,
        "active": record.is_active(today),
        "messages": [message.text for message in record.anchored],
        "created_at": record.created_at.isoformat(),
    }


def render_anchored(text: str, variables: dict[str, str]) -> str:
    """Fill `{name}` template variables; unknown placeholders stay as written."""
    for key, value in variables.items():
        text = text.replace("{" + key + "}", value)
    return text


async def create_campaign(request: web.Request) -> web.Response:
    require_api_key(request)
    body = await read_json(request, CampaignIn)
    async with request.app[SESSIONS].begin() as session:
        record = await campaigns.create_campaign(
            session,
            name=body.name,
            messages=[render_anchored(text, body.variables) for text in body.messages],
            variables=dict(body.variables),
            expire_at=body.expire_at,
        )
    return web.json_response(campaign_json(record, date.today()), status=201)


async def list_campaigns(request: web.Request) -> web.Response:
    require_api_key(request)
    async with request.app[SESSIONS]() as session:
        records = await campaigns.list_campaigns(session)
    today = date.today()
    return web.json_response({"campaigns": [campaign_json(r, today) for r in records]})


async def get_campaign(request: web.Request) -> web.Response:
    require_api_key(request)
    async with request.app[SESSIONS]() as session:
        try:
            record = await campaigns.get_campaign(session, path_id(request, "campaign_id"))
        except RecordNotFound as exc:
            raise NotFound(str(exc)) from exc
    return web.json_response(campaign_json(record, date.today()))


async def delete_campaign(request: web.Request) -> web.Response:
    require_api_key(request)
    async with request.app[SESSIONS].begin() as session:
        try:
            await campaigns.delete_campaign(session, path_id(request, "campaign_id"))
        except RecordNotFound as exc:
            raise NotFound(str(exc)) from exc
    return web.Response(status=204)


CAMPAIGN_ID = [
    {"name": "campaign_id", "in": "path", "required": True, "schema": {"type": "string"}}
]
document(
    "POST",
    "/v1/campaigns",
    "Create a campaign with anchored system messages",
    body=CampaignIn,
    responses={201: "created", 400: "malformed body"},
)
document("GET", "/v1/campaigns", "List campaigns", responses={200: "campaigns"})
document(
    "GET",
    "/v1/campaigns/{campaign_id}",
    "One campaign",
    responses={200: "the campaign", 404: "no such campaign"},
    parameters=CAMPAIGN_ID,
)
document(
    "DELETE",
    "/v1/campaigns/{campaign_id}",
    "Delete (deactivate) a campaign",
    responses={204: "deleted", 404: "no such campaign"},
    parameters=CAMPAIGN_ID,
)


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/campaigns", create_campaign)
    app.router.add_get("/v1/campaigns", list_campaigns)
    app.router.add_get("/v1/campaigns/{campaign_id}", get_campaign)
    app.router.add_delete("/v1/campaigns/{campaign_id}", delete_campaign)

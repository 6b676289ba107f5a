"""`/v1/settings`: the stored tenant settings, one level at a time.

`GET /v1/settings/{level}` reads what the level stores (`?effective=true`: the settings a
message of that tenant and channel follows), `PUT` replaces the level's keys, `PATCH` merges
keys into them; a change that would give unusable settings is refused with 422 naming the
keys. The level is a path (`gateway.settings_admin.levels`): `domain/default`,
`domain/default/host/shop.example.com/channel/whatsapp`, … Every change is audited
(`settings_changed`, subject the level's path) and takes effect for the next message in every
process. Callers authenticate like the operator API: the Bearer API key (the body's `actor`
says who acts) or a console login (plus `X-CSRF-Token` on writes); any operator may read, only
an admin's login may change them (an agent's is refused with 403 `admin_only`).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import Field

from channels.base import unstorable
from gateway.api.operator_bodies import Decision, audit_json
from gateway.http.bodies import read_json
from gateway.http.errors import NotFound, Unprocessable
from gateway.http.openapi import document
from gateway.keys import REDIS, SESSIONS
from gateway.operators.actor import operator_actor
from gateway.operators.reasons import check_reason
from gateway.settings_admin.documents import SettingsInvalid, patched
from gateway.settings_admin.levels import LevelInvalid, SettingsLevel
from gateway.settings_admin.schema import settings_schema
from gateway.settings_admin.service import SettingsChange, change_level, effective_for, read_level


class SettingsChangeIn(Decision):
    """A level's keys (PUT: all the level stores; PATCH: merged into what it stores), why,
    and who changes them when the caller uses the API key."""

    settings: dict[str, Any] = Field(
        description="keys of the tenant settings (see GET /v1/settings/schema); a tenant "
        "level may hold `channels`, one table per channel"
    )


def _level(request: web.Request) -> SettingsLevel:
    raw = request.match_info.get("level", "")
    if unstorable(raw):
        raise NotFound("no such settings level")
    try:
        return SettingsLevel.from_path(raw)
    except LevelInvalid as exc:
        raise NotFound(str(exc), code="unknown_level") from exc


def level_json(level: SettingsLevel) -> dict[str, Any]:
    return {
        "path": level.path(),
        "kind": level.kind,
        "domain": level.domain,
        "host": level.host,
        "assistant": level.assistant_id,
        "channel": level.channel,
    }


async def read_settings(request: web.Request) -> web.Response:
    await operator_actor(request)
    level = _level(request)
    async with request.app[SESSIONS]() as session:
        if request.query.get("effective", "").lower() in ("1", "true", "yes"):
            try:
                effective = await effective_for(session, level)
            except ValueError as exc:
                raise Unprocessable(str(exc), code="invalid_settings") from exc
            return web.json_response(
                {"level": level_json(level), "effective": effective.model_dump(mode="json")}
            )
        stored = await read_level(session, level)
    return web.json_response({"level": level_json(level), "settings": stored})


async def replace_settings(request: web.Request) -> web.Response:
    return await _change(request, replace=True)


async def merge_settings(request: web.Request) -> web.Response:
    return await _change(request, replace=False)


async def _change(request: web.Request, *, replace: bool) -> web.Response:
    who = await operator_actor(request, admin_only=True)
    level = _level(request)
    body = await read_json(request, SettingsChangeIn)
    reason = check_reason(body.reason)
    given = body.settings

    def edit(stored: dict[str, Any]) -> dict[str, Any]:
        return patched({}, given) if replace else patched(stored, given)

    try:
        change = await change_level(
            request.app[SESSIONS],
            request.app.get(REDIS),
            level,
            edit,
            actor=who or body.actor,
            reason=reason,
        )
    except SettingsInvalid as exc:
        raise Unprocessable(str(exc), code="invalid_settings") from exc
    return web.json_response(change_json(change))


def change_json(change: SettingsChange) -> dict[str, Any]:
    return {
        "level": level_json(change.level),
        "settings": change.after,
        "changed": [c.key for c in change.changed],
        "audit": audit_json(change.audit) if change.audit is not None else None,
    }


async def read_schema(request: web.Request) -> web.Response:
    await operator_actor(request)
    return web.json_response(settings_schema())


_LEVEL = [
    {
        "name": "level",
        "in": "path",
        "required": True,
        "description": "name/value pairs in the order domain, host, assistant, channel, e.g. "
        "domain/default/host/shop.example.com/channel/whatsapp",
        "schema": {"type": "string"},
    }
]
_EFFECTIVE = [
    {
        "name": "effective",
        "in": "query",
        "required": False,
        "description": "true: the merged settings a message of the level follows",
        "schema": {"type": "string"},
    }
]
_REFUSALS = {
    400: "malformed body or blank reason",
    403: "an agent's login (code admin_only), or a login without its X-CSRF-Token",
    404: "the path names no settings level",
    422: "the settings would not be usable; the detail names the keys",
}

document(
    "GET",
    "/v1/settings/schema",
    "The tenant settings as a JSON Schema",
    responses={200: "JSON Schema"},
)
document(
    "GET",
    "/v1/settings/{level}",
    "What one level of tenant settings stores (or, with ?effective=true, the merged result)",
    parameters=[*_LEVEL, *_EFFECTIVE],
    responses={200: "the level and its keys", 404: _REFUSALS[404], 422: _REFUSALS[422]},
)
document(
    "PUT",
    "/v1/settings/{level}",
    "Replace what one level of tenant settings stores (audited)",
    body=SettingsChangeIn,
    parameters=_LEVEL,
    responses={200: "the level's keys, the keys changed and the audit entry", **_REFUSALS},
)
document(
    "PATCH",
    "/v1/settings/{level}",
    "Merge keys into one level of tenant settings (audited)",
    body=SettingsChangeIn,
    parameters=_LEVEL,
    responses={200: "the level's keys, the keys changed and the audit entry", **_REFUSALS},
)


# Any characters, line breaks too (`.` stops at one), so a malformed level still reaches the
# handler and is refused there after the credentials, never answered 404 unauthenticated.
_LEVEL_ROUTE = r"/v1/settings/{level:[\s\S]+}"


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/settings/schema", read_schema)
    app.router.add_get(_LEVEL_ROUTE, read_settings)
    app.router.add_put(_LEVEL_ROUTE, replace_settings)
    app.router.add_patch(_LEVEL_ROUTE, merge_settings)

"""`operator_actor` behind a real aiohttp server with the gateway's error middleware: the API
key, or a login with its CSRF header on state-changing calls; refusals are JSON answers."""

from __future__ import annotations

import uuid
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.http.middleware import error_middleware
from gateway.keys import SESSIONS, SETTINGS
from gateway.operators import logins
from gateway.operators.accounts import create_operator
from gateway.operators.actor import API_KEY_ACTOR, CSRF_HEADER, admin_actor, operator_actor
from gateway.operators.reasons import check_reason
from gateway.storage.repositories.operators import OperatorRole
from tests.support.app_settings import API_KEY, make_settings


async def _who(request: web.Request) -> web.Response:
    return web.json_response({"actor": await operator_actor(request)})


async def _admin_only(request: web.Request) -> web.Response:
    # What a settings change does first: only an admin (or the API key) gets past.
    return web.json_response({"actor": await admin_actor(request)})


async def _audited(request: web.Request) -> web.Response:
    await operator_actor(request)
    return web.json_response({"reason": check_reason(await request.text())})


async def _client(
    tmp_path: Path, aiohttp_client: AiohttpClient, sessions: async_sessionmaker[AsyncSession]
) -> TestClient:  # type: ignore[type-arg]
    app = web.Application(middlewares=[error_middleware])
    app[SETTINGS] = make_settings(tmp_path)
    app[SESSIONS] = sessions
    app.router.add_get("/who", _who)
    app.router.add_post("/who", _who)
    app.router.add_post("/audited", _audited)
    app.router.add_put("/settings", _admin_only)
    return await aiohttp_client(app)


async def _login(
    sessions: async_sessionmaker[AsyncSession], role: OperatorRole = OperatorRole.AGENT
) -> tuple[str, logins.OperatorLogin]:
    username = f"ops-{uuid.uuid4().hex[:12]}"
    async with sessions.begin() as session:
        await create_operator(session, username, "correct horse battery", role=role)
        return await logins.log_in(session, username, "correct horse battery")


async def test_the_api_key_acts_for_the_body_and_a_wrong_one_is_401(
    tmp_path: Path, aiohttp_client: AiohttpClient, sessions: async_sessionmaker[AsyncSession]
) -> None:
    client = await _client(tmp_path, aiohttp_client, sessions)
    right = await client.post("/who", headers={"Authorization": f"Bearer {API_KEY}"})
    assert right.status == 200 and await right.json() == {"actor": None}
    wrong = await client.get("/who", headers={"Authorization": "Bearer nope"})
    assert wrong.status == 401
    assert (await wrong.json())["error"] == "unauthorized"
    nobody = await client.get("/who")
    assert nobody.status == 401
    assert await nobody.json() == {
        "error": "unauthorized",
        "detail": "a valid Bearer API key or a console login is required",
    }


async def test_a_login_acts_as_its_operator_and_a_post_needs_the_csrf_header(
    tmp_path: Path, aiohttp_client: AiohttpClient, sessions: async_sessionmaker[AsyncSession]
) -> None:
    client = await _client(tmp_path, aiohttp_client, sessions)
    token, login = await _login(sessions)
    cookie = {"Cookie": f"{logins.COOKIE}={token}"}
    read = await client.get("/who", headers=cookie)
    assert await read.json() == {"actor": login.username}
    unsigned = await client.post("/who", headers=cookie)
    assert unsigned.status == 403
    assert (await unsigned.json())["error"] == "csrf_failed"
    forged = await client.post("/who", headers={**cookie, CSRF_HEADER: "forged"})
    assert forged.status == 403
    signed = await client.post("/who", headers={**cookie, CSRF_HEADER: login.csrf_token})
    assert signed.status == 200 and await signed.json() == {"actor": login.username}


async def test_an_operator_refusal_is_mapped_to_its_status_and_code(
    tmp_path: Path, aiohttp_client: AiohttpClient, sessions: async_sessionmaker[AsyncSession]
) -> None:
    client = await _client(tmp_path, aiohttp_client, sessions)
    auth = {"Authorization": f"Bearer {API_KEY}"}
    blank = await client.post("/audited", data="   ", headers=auth)
    assert blank.status == 400
    assert await blank.json() == {"error": "reason_required", "detail": "a reason is required"}
    given = await client.post("/audited", data=" asked ", headers=auth)
    assert await given.json() == {"reason": "asked"}


async def test_only_an_admin_or_the_api_key_passes_admin_actor(
    tmp_path: Path, aiohttp_client: AiohttpClient, sessions: async_sessionmaker[AsyncSession]
) -> None:
    client = await _client(tmp_path, aiohttp_client, sessions)
    key = await client.put("/settings", headers={"Authorization": f"Bearer {API_KEY}"})
    assert key.status == 200 and await key.json() == {"actor": API_KEY_ACTOR}
    wrong_key = await client.put("/settings", headers={"Authorization": "Bearer nope"})
    assert wrong_key.status == 401

    token, agent = await _login(sessions)
    refused = await client.put(
        "/settings",
        headers={"Cookie": f"{logins.COOKIE}={token}", CSRF_HEADER: agent.csrf_token},
    )
    assert refused.status == 403
    assert await refused.json() == {
        "error": "admin_only",
        "detail": f"operator {agent.username!r} is an agent: only an admin may do this",
    }
    # The agent's login still works where an agent may act.
    who = await client.get("/who", headers={"Cookie": f"{logins.COOKIE}={token}"})
    assert await who.json() == {"actor": agent.username}

    token, admin = await _login(sessions, OperatorRole.ADMIN)
    cookie = {"Cookie": f"{logins.COOKIE}={token}"}
    unsigned = await client.put("/settings", headers=cookie)
    assert unsigned.status == 403 and (await unsigned.json())["error"] == "csrf_failed"
    allowed = await client.put("/settings", headers={**cookie, CSRF_HEADER: admin.csrf_token})
    assert allowed.status == 200 and await allowed.json() == {"actor": admin.username}

"""The operator API for console accounts, admins only: list, add, disable, enable, reset a
password, remove (`gateway.operators.account_actions`, with their rules and audit entries).

The Bearer API key acts as an admin (audited as `api-key`); a console login must be an admin's
(cookie, `X-CSRF-Token` on POSTs and DELETEs); an agent's is refused (403 `admin_only`).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from gateway.http.bodies import path_id, read_json
from gateway.http.errors import BadRequest, NotFound
from gateway.http.openapi import document
from gateway.keys import SESSIONS
from gateway.operators import account_actions
from gateway.operators.account_actions import AccountActor
from gateway.operators.accounts import OperatorAccountError
from gateway.operators.actor import API_KEY_ACTOR, acting_login
from gateway.storage.repositories import operators
from gateway.storage.repositories.operators import OperatorAccount, OperatorRole

_REASON = "through the operator API"


class AccountIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    username: str = Field(min_length=1, max_length=200, pattern=r"^\S+$")
    password: str = Field(min_length=10, max_length=1000)
    role: OperatorRole = OperatorRole.AGENT


class PasswordIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    password: str | None = Field(
        None, min_length=10, max_length=1000, description="omitted: one is generated"
    )


def account_json(account: OperatorAccount) -> dict[str, Any]:
    return {
        "username": account.username,
        "role": account.role.value,
        "disabled_at": account.disabled_at.isoformat() if account.disabled_at else None,
        "created_at": account.created_at.isoformat(),
    }


async def _actor(request: web.Request) -> AccountActor:
    login = await acting_login(request, admin_only=True)
    if login is None:
        return AccountActor(API_KEY_ACTOR, None, _REASON)
    return AccountActor(login.username, login.operator_id, _REASON)


async def _account(request: web.Request, username: str) -> web.Response:
    async with request.app[SESSIONS]() as session:
        found = await operators.operator_by_username(session, username.strip())
    if found is None:
        raise NotFound(f"no operator account {username.strip()!r}")
    return web.json_response(account_json(found))


async def list_accounts(request: web.Request) -> web.Response:
    await _actor(request)
    async with request.app[SESSIONS]() as session:
        accounts = await account_actions.list_accounts(session)
    return web.json_response({"accounts": [account_json(a) for a in accounts]})


async def add_account(request: web.Request) -> web.Response:
    actor = await _actor(request)
    body = await read_json(request, AccountIn)
    async with request.app[SESSIONS].begin() as session:
        try:
            await account_actions.add_account(
                session, body.username, body.password, body.role, actor=actor
            )
        except OperatorAccountError as exc:
            raise BadRequest(str(exc), code="invalid_body") from exc
    response = await _account(request, body.username)
    response.set_status(201)
    return response


async def disable_account(request: web.Request) -> web.Response:
    actor = await _actor(request)
    username = path_id(request, "username")
    async with request.app[SESSIONS].begin() as session:
        await account_actions.disable_account(session, username, actor=actor)
    return await _account(request, username)


async def enable_account(request: web.Request) -> web.Response:
    actor = await _actor(request)
    username = path_id(request, "username")
    async with request.app[SESSIONS].begin() as session:
        await account_actions.enable_account(session, username, actor=actor)
    return await _account(request, username)


async def reset_password(request: web.Request) -> web.Response:
    actor = await _actor(request)
    username = path_id(request, "username")
    # No body at all asks for a generated password, as `{}` does.
    body = await read_json(request, PasswordIn) if request.body_exists else PasswordIn()
    async with request.app[SESSIONS].begin() as session:
        password = await account_actions.reset_password(
            session, username, body.password, actor=actor
        )
    # A generated password is answered once; one the caller chose is not echoed.
    return web.json_response(
        {"username": username, "password": password if body.password is None else None}
    )


async def remove_account(request: web.Request) -> web.Response:
    actor = await _actor(request)
    username = path_id(request, "username")
    async with request.app[SESSIONS].begin() as session:
        await account_actions.remove_account(session, username, actor=actor)
    return web.json_response({"username": username, "removed": True})


_NOTE = (
    " (admins only: the Bearer API key, or an admin's console login with X-CSRF-Token on"
    " POSTs and DELETEs; an agent's login is refused with 403 admin_only)"
)
_USERNAME = [{"name": "username", "in": "path", "required": True, "schema": {"type": "string"}}]
_REFUSED = {403: "an agent's login, or no CSRF header", 404: "no such account"}
_LOCKING = {409: "one's own account, or the last active admin"}

document(
    "GET",
    "/v1/operator/accounts",
    "Every operator account with its role and state" + _NOTE,
    responses={200: "the accounts", 403: "an agent's login"},
)
document(
    "POST",
    "/v1/operator/accounts",
    "Create an operator account (an agent unless role is admin); audited" + _NOTE,
    body=AccountIn,
    responses={201: "the account", 400: "invalid", 403: "an agent's login", 409: "taken"},
)
document(
    "POST",
    "/v1/operator/accounts/{username}/disable",
    "Disable an account: its logins are refused and its open ones end; audited" + _NOTE,
    parameters=_USERNAME,
    responses={200: "the account", **_REFUSED, **_LOCKING},
)
document(
    "POST",
    "/v1/operator/accounts/{username}/enable",
    "Let a disabled account log in again; audited" + _NOTE,
    parameters=_USERNAME,
    responses={200: "the account", **_REFUSED},
)
document(
    "POST",
    "/v1/operator/accounts/{username}/reset-password",
    "Set a new password (generated and answered once when none is given); the account's open"
    " logins end; audited" + _NOTE,
    body=PasswordIn,
    parameters=_USERNAME,
    responses={200: "done", 400: "invalid", **_REFUSED},
)
document(
    "DELETE",
    "/v1/operator/accounts/{username}",
    "Remove an account and its logins (its audit entries stay); audited" + _NOTE,
    parameters=_USERNAME,
    responses={200: "removed", **_REFUSED, **_LOCKING},
)


def add_routes(app: web.Application) -> None:
    """Only through `gateway.api.operator.add_routes`, which registers all of `/v1/operator`."""
    app.router.add_get("/v1/operator/accounts", list_accounts)
    app.router.add_post("/v1/operator/accounts", add_account)
    app.router.add_post("/v1/operator/accounts/{username}/disable", disable_account)
    app.router.add_post("/v1/operator/accounts/{username}/enable", enable_account)
    app.router.add_post("/v1/operator/accounts/{username}/reset-password", reset_password)
    app.router.add_delete("/v1/operator/accounts/{username}", remove_account)

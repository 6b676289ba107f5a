"""`/openapi.json`: the HTTP API described for client generators and fuzzers.

Request bodies come from the same pydantic models the handlers validate with, so the document
cannot drift from what the code accepts.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error", "detail"],
    "properties": {"error": {"type": "string"}, "detail": {"type": "string"}},
}

IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "retries with the same key and body get the first response back "
    "(with `Idempotent-Replayed: true`) for 24 hours",
    # The same rule as gateway.http.idempotency.is_valid_key: 1-255 printable ASCII characters.
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7e]+$"},
}

_BODIES: dict[tuple[str, str], type[BaseModel]] = {}
_OPERATIONS: dict[str, dict[str, Any]] = {}


def document(
    method: str,
    path: str,
    summary: str,
    *,
    body: type[BaseModel] | None = None,
    responses: dict[int, str],
    secured: bool = True,
    parameters: list[dict[str, Any]] | None = None,
    media_type: str = "application/json",
) -> None:
    """Register one operation (called next to the route it documents).

    `media_type` is what a success answers with; every error is the JSON `Error` shape. The
    statuses that the middleware gives every route of a kind (401 without credentials, 400 for
    an invalid body or Idempotency-Key, 413 for a body over the limit) are added here, so the
    document lists every status the gateway can answer with.
    """
    operation: dict[str, Any] = {
        "summary": summary,
        "responses": {
            str(status): _response(status, description, media_type)
            for status, description in responses.items()
        },
    }
    statuses = operation["responses"]
    if secured:
        # Operator routes also take the console login (cookie, plus X-CSRF-Token on writes).
        operator = path.startswith(("/v1/operator", "/v1/settings", "/console/api"))
        operation["security"] = [{"bearer": []}, {"console": []}] if operator else [{"bearer": []}]
        statuses.setdefault("401", _response(401, "missing or wrong API key"))
        if operator and method in ("POST", "PUT", "PATCH"):
            statuses.setdefault("403", _response(403, "a console login without its X-CSRF-Token"))
    if method == "POST":
        statuses.setdefault("413", _response(413, "body larger than RELAYDESK_MAX_BODY_BYTES"))
    if body is not None:
        statuses.setdefault("400", _response(400, "malformed JSON or a body that fails its schema"))
    if "{" in path:
        statuses.setdefault("404", _response(404, "nothing under that id"))
    if any(p["in"] == "query" for p in parameters or []):
        statuses.setdefault("400", _response(400, "a query value that is not usable"))
    if secured and method == "POST" and path.startswith("/v1/"):
        parameters = [*(parameters or []), IDEMPOTENCY_KEY]
        statuses.setdefault("400", _response(400, "an invalid Idempotency-Key"))
        statuses.setdefault("409", _response(409, "the key's request still runs"))
        statuses.setdefault("422", _response(422, "the key was used elsewhere"))
    if parameters:
        operation["parameters"] = parameters
    if body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{body.__name__}"}}
            },
        }
        _BODIES[(method, path)] = body
    _OPERATIONS.setdefault(path, {})[method.lower()] = operation


def _response(
    status: int, description: str, media_type: str = "application/json"
) -> dict[str, Any]:
    if status == 204:
        return {"description": description}
    if status >= 400:
        return {
            "description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    schema: dict[str, Any] = {} if media_type == "application/json" else {"type": "string"}
    return {"description": description, "content": {media_type: {"schema": schema}}}


def spec() -> dict[str, Any]:
    schemas: dict[str, Any] = {"Error": ERROR_SCHEMA}
    for model in _BODIES.values():
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    return {
        "openapi": "3.1.0",
        "info": {"title": "Relaydesk", "version": "0.1.0"},
        "paths": dict(sorted(_OPERATIONS.items())),
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "console": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "relaydesk_console",
                    "description": "operator console login; state-changing requests also "
                    "need the session's token in the X-CSRF-Token header",
                },
            },
        },
    }


async def openapi_json(request: web.Request) -> web.Response:
    return web.json_response(spec())


def add_routes(app: web.Application) -> None:
    app.router.add_get("/openapi.json", openapi_json)


document(
    "GET",
    "/healthz",
    "Database and Redis health",
    responses={
        200: 'healthy ("ok"), or accepting without Redis ("degraded")',
        503: "the database is down",
    },
    secured=False,
)
document(
    "GET",
    "/metrics",
    "Prometheus metrics (Bearer RELAYDESK_METRICS_TOKEN when it is set)",
    responses={200: "metrics text", 401: "RELAYDESK_METRICS_TOKEN is set and not presented"},
    secured=False,
    media_type="text/plain",
)
document("GET", "/openapi.json", "This document", responses={200: "OpenAPI 3.1"}, secured=False)

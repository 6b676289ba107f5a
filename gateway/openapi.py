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
    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
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
) -> None:
    """Register one operation (called next to the route it documents)."""
    operation: dict[str, Any] = {
        "summary": summary,
        "responses": {
            str(status): _response(status, description) for status, description in responses.items()
        },
    }
    if secured:
        # Operator routes also take the console login (cookie, plus X-CSRF-Token on writes).
        operator = path.startswith("/v1/operator") or path.startswith("/console/api")
        operation["security"] = [{"bearer": []}, {"console": []}] if operator else [{"bearer": []}]
        operation["responses"].setdefault("401", _response(401, "missing or wrong API key"))
    if secured and method == "POST" and path.startswith("/v1/"):
        parameters = [*(parameters or []), IDEMPOTENCY_KEY]
        operation["responses"].setdefault("409", _response(409, "the key's request still runs"))
        operation["responses"].setdefault("422", _response(422, "the key was used elsewhere"))
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


def _response(status: int, description: str) -> dict[str, Any]:
    if status == 204:
        return {"description": description}
    if status >= 400:
        return {
            "description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    return {"description": description, "content": {"application/json": {"schema": {}}}}


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
    responses={200: "healthy", 503: "a dependency is down"},
    secured=False,
)
document("GET", "/metrics", "Prometheus metrics", responses={200: "metrics text"}, secured=False)

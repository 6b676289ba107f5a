"""Reading JSON request bodies into pydantic models, with a 400 that says what is wrong."""

from __future__ import annotations

import json
from typing import TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from gateway.errors import BadRequest

Model = TypeVar("Model", bound=BaseModel)


def describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "body"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


async def read_json(request: web.Request, model: type[Model]) -> Model:
    raw = await request.read()
    try:
        data = json.loads(raw or b"null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"body is not valid JSON: {exc}", code="malformed_json") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(describe(exc), code="invalid_body") from exc

"""Reading request input: JSON bodies into pydantic models and path or query values, each with
a 4xx that says what is wrong.

Text that no backend can store is refused here, at the edge: PostgreSQL rejects NUL in text,
and a lone surrogate (`"\\ud800"` in JSON) cannot be encoded as UTF-8 by either driver; let
through, both would fail deep in a handler as a 500.
"""

from __future__ import annotations

from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from channels.base import PayloadInvalid, unstorable
from channels.json_body import MAX_DEPTH, load_json
from gateway.http.errors import BadRequest, NotFound

Model = TypeVar("Model", bound=BaseModel)


def describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "body"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def find_unstorable(value: Any, where: str = "body", depth: int = 0) -> str | None:
    """The first string (key or value) in decoded JSON that cannot be stored, described."""
    if depth > MAX_DEPTH:
        return f"{where}: nested too deeply"
    if isinstance(value, str):
        why = unstorable(value)
        return f"{where}: {why}" if why else None
    if isinstance(value, dict):
        for key, item in value.items():
            why = unstorable(key)
            if why:
                return f"{where}: a key {why}"
            found = find_unstorable(item, f"{where}.{key}", depth + 1)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = find_unstorable(item, f"{where}.{index}", depth + 1)
            if found:
                return found
    return None


async def read_json(request: web.Request, model: type[Model]) -> Model:
    try:
        data = load_json(await request.read())
    except PayloadInvalid as exc:
        raise BadRequest(str(exc), code="malformed_json") from exc
    problem = find_unstorable(data)
    if problem is not None:
        raise BadRequest(problem, code="invalid_text")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(describe(exc), code="invalid_body") from exc


def path_id(request: web.Request, name: str) -> str:
    """A path segment naming a record; one no record can have is simply not found."""
    value = request.match_info[name]
    if unstorable(value):
        raise NotFound(f"no such {name.removesuffix('_id')}")
    return value


def query_text(request: web.Request, name: str) -> str | None:
    value = request.query.get(name)
    if value is not None:
        why = unstorable(value)
        if why:
            raise BadRequest(f"{name} {why}", code="invalid_query")
    return value

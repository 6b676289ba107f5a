"""One call of a business endpoint: the checked arguments, the identity assertion, the
endpoint's secrets from the environment, through the safe fetcher (the URL and every
connection checked, no redirect followed, the answer capped, the call bounded by its timeout).

A call that cannot be made or gets no usable answer is an outcome like any other, told to the
model as a failure: nothing here raises for a business API's fault.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from gateway.tools.arguments import CheckedArguments
from gateway.tools.assertion import HEADER
from gateway.tools.settings import EndpointSettings
from outbound.errors import FetchError, FetchFailed
from outbound.fetcher import SafeFetcher
from outbound.kinds import FetchKind

__all__ = ["ActionOutcome", "call_endpoint", "endpoint_headers"]

# Methods whose arguments travel as a JSON body; the others' as the query string.
_BODY_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})


@dataclass(frozen=True, slots=True)
class ActionOutcome:
    """``ok``: ``body`` is the endpoint's answer (text); ``failed``: ``body`` says why, for the
    model and the audit trail."""

    status: Literal["ok", "failed"]
    body: str
    latency_ms: float
    http_status: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class MissingSecret(LookupError):
    """An endpoint's header names an environment variable that is not set."""


def endpoint_headers(endpoint: EndpointSettings, environ: Mapping[str, str]) -> dict[str, str]:
    """The endpoint's own headers, their values read from the environment now."""
    headers: dict[str, str] = {}
    for header, variable in endpoint.headers_from_env.items():
        value = environ.get(variable)
        if not value:
            raise MissingSecret(f"the environment variable {variable} is not set")
        headers[header] = value
    return headers


async def call_endpoint(
    fetcher: SafeFetcher,
    endpoint: EndpointSettings,
    arguments: CheckedArguments,
    *,
    assertion: str,
    environ: Mapping[str, str],
    idempotency_key: str | None = None,
) -> ActionOutcome:
    """Call ``endpoint`` once with ``arguments``; the outcome says how it went."""
    started = time.perf_counter()

    def outcome(status: Literal["ok", "failed"], body: str, http: int | None) -> ActionOutcome:
        return ActionOutcome(status, body, (time.perf_counter() - started) * 1000, http)

    try:
        headers = endpoint_headers(endpoint, environ)
    except MissingSecret as exc:
        return outcome("failed", f"not called: {exc}", None)
    headers[HEADER] = assertion
    headers["Accept"] = "application/json"
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key
    content: bytes | None = None
    params: dict[str, str] | None = None
    if endpoint.method in _BODY_METHODS:
        headers["Content-Type"] = "application/json"
        content = arguments.json_text.encode()
    else:
        params = _query(arguments)
    try:
        answer = await fetcher.request(
            endpoint.method,
            endpoint.url,
            kind=FetchKind.ACTION,
            timeout_s=endpoint.timeout_s,
            headers=headers,
            params=params,
            content=content,
        )
    except FetchFailed as exc:
        return outcome("failed", str(exc), exc.status)
    except FetchError as exc:
        return outcome("failed", f"refused: {exc}", None)
    return outcome("ok", answer.body.decode("utf-8", errors="replace"), answer.status)


def _query(arguments: CheckedArguments) -> dict[str, str]:
    """Scalars as they are; lists and objects as JSON text."""
    query: dict[str, str] = {}
    for name, value in arguments.as_object().items():
        if isinstance(value, str):
            query[name] = value
        elif isinstance(value, bool) or value is None:
            query[name] = json.dumps(value)
        elif isinstance(value, int | float):
            query[name] = str(value)
        else:
            query[name] = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return query

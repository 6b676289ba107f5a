"""schemathesis against the live gateway's `/openapi.json`: every documented operation, with the
API key and without credentials, on a real socket.

Checks on every response: no 5xx, the status is one the operation documents, the body matches
the documented media type and schema, schema-violating requests are refused, secured
operations refuse callers without credentials, and every error is `{"error", "detail"}` JSON.

Not fuzzed here, on purpose: the web chat websocket (`/webchat/ws` is not request/response and
not in the document; its frames are fuzzed by fuzz/webchat_frames.py, see
tests/test_fuzz_harnesses.py, and pinned in tests/flows/api/test_fuzz_findings.py), the console's
HTML pages and forms and the chat widget page (HTML for browsers, not in the document), and
`/healthz` (it answers 503 by design whenever a dependency is down, so "no 5xx" is not its
contract). `/metrics` (Prometheus text) stays in: its documented media type is checked.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import APIOperation, Case, CheckContext, GenerationMode, Response
from schemathesis.checks import max_response_time
from schemathesis.specs.openapi.checks import (
    ignored_auth,
    positive_data_acceptance,
    unsupported_method,
)

from gateway.http.openapi import spec
from tests.support.stack import API_KEY, running_stack

BACKENDS = ["embedded", "production"]
AUTH = {"Authorization": f"Bearer {API_KEY}"}
START_TIMEOUT_S = 60
# Per operation and credential: with about 25 operations a backend's run stays near 20 s.
EXAMPLES = 12

NOT_FUZZED = r"^/healthz$"

EXCLUDED_CHECKS = [
    # The handlers refuse some schema-valid bodies for reasons a JSON schema cannot say (a
    # transcript's shape depends on its `format`, an external id must parse as a phone number
    # for its channel); each such refusal is a documented 400 in the error shape, checked below.
    positive_data_acceptance,
    # A 405 must carry `Allow` (RFC 9110), but the error middleware rebuilds 405 as JSON without
    # it; test_a_405_names_the_allowed_methods below tracks that.
    unsupported_method,
    # Timing is not a contract here; the machine is shared.
    max_response_time,
]


class LiveGateway:
    """The gateway on a real socket, served from its own thread and event loop, so the
    synchronous HTTP client schemathesis uses cannot block the server."""

    def __init__(self, backend: str, tmp_path: Path) -> None:
        self.backend = backend
        self.tmp_path = tmp_path
        self.url = ""
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name=f"gateway-{backend}", daemon=True)

    def __enter__(self) -> LiveGateway:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise TimeoutError(f"the {self.backend} gateway did not start")
        if self.error is not None:
            raise self.error
        return self

    def __exit__(self, *_: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(START_TIMEOUT_S)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # a skip (service absent) or a startup failure
            self.error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with running_stack(self.backend, self.tmp_path) as stack:
            self.url = str(stack.client.make_url("")).rstrip("/")
            self._ready.set()
            await self._stop.wait()


@pytest.fixture(scope="module", params=BACKENDS)
def gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with LiveGateway(request.param, tmp_path_factory.mktemp(request.param)) as live:
        yield live.url


@pytest.fixture(scope="module")
def http(gateway: str) -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


# schemathesis' default for "a schema-violating request is refused", plus 413: a body over
# RELAYDESK_MAX_BODY_BYTES (a too-long string) is refused before it is read.
REFUSED = "400 401 403 404 405 406 409 413 415 422 428 429 5xx".split()
CONFIG = schemathesis.Config.from_dict(
    {"checks": {"negative_data_rejection": {"expected-statuses": REFUSED}}}
)


@pytest.fixture(scope="module")
def openapi(gateway: str) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(f"{gateway}/openapi.json", config=CONFIG)


def documented_operations() -> list[tuple[str, str]]:
    """(method, path) of every operation, read at collection time from the same code that
    serves `/openapi.json` (the live document is what the tests then fuzz)."""
    from gateway.app import create_app  # noqa: F401  (registers every route's document)

    operations = []
    for path, methods in spec()["paths"].items():
        if not re.match(NOT_FUZZED, path):
            operations.extend((method.upper(), path) for method in methods)
    return operations


OPERATIONS = documented_operations()
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def assert_error_shape(response: Response | requests.Response) -> None:
    """JSON `{"error": str, "detail": str}`."""
    content_type = str(response.headers.get("content-type", ""))
    assert "application/json" in content_type, f"error as {content_type!r}"
    body = json.loads(response.content)
    assert isinstance(body, dict), f"error body is not an object: {body!r}"
    assert isinstance(body.get("error"), str) and body["error"], f"no error code: {body!r}"
    assert isinstance(body.get("detail"), str), f"no detail: {body!r}"


def error_shape(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """Every 4xx and 5xx is the error shape."""
    if response.status_code < 400:
        return None
    assert_error_shape(response)
    return True


def refused_without_credentials(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """A secured operation answers a caller without credentials with 401 (or refuses the
    request before looking at who sent it: an invalid Idempotency-Key, a body over the limit)."""
    if not case.operation.definition.raw.get("security"):
        return None
    assert response.status_code in (400, 401, 413), f"{response.status_code} without credentials"
    if response.status_code == 400:
        assert json.loads(response.content)["error"] == "invalid_idempotency_key"
    return True


def fuzz(operation: APIOperation, check: Callable[[Case], None]) -> None:
    """Run `check` over positive (schema-valid) and negative (schema-violating) cases."""
    cases = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )

    @FUZZ
    @given(case=cases)
    def run(case: Case) -> None:
        check(case)

    run()


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_with_the_api_key(
    openapi: schemathesis.BaseSchema, http: requests.Session, method: str, path: str
) -> None:
    def check(case: Case) -> None:
        case.call_and_validate(
            session=http,
            headers=AUTH,
            excluded_checks=EXCLUDED_CHECKS,
            additional_checks=[error_shape],
            timeout=30,
        )

    fuzz(openapi[path][method], check)


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_without_credentials(
    openapi: schemathesis.BaseSchema, http: requests.Session, method: str, path: str
) -> None:
    def check(case: Case) -> None:
        # Drop whatever credentials the case made up from the security schemes.
        if case.headers:
            case.headers = {k: v for k, v in case.headers.items() if k.lower() != "authorization"}
        case.cookies = {}
        case.call_and_validate(
            session=http,
            # ignored_auth resends with credentials it takes for valid; there are none here.
            excluded_checks=[*EXCLUDED_CHECKS, ignored_auth],
            additional_checks=[error_shape, refused_without_credentials],
            timeout=30,
        )

    fuzz(openapi[path][method], check)


def poisoned(value: Any, bad: str) -> Any:
    """`value` with `bad` appended to every string in it (keys too)."""
    if isinstance(value, str):
        return value + bad
    if isinstance(value, dict):
        return {poisoned(k, bad): poisoned(v, bad) for k, v in value.items()}
    if isinstance(value, list):
        return [poisoned(item, bad) for item in value]
    return value


def hostile_request(case: Case, base_url: str) -> dict[str, Any]:
    """The case as request arguments with NUL appended to every path, query and body string,
    or, in every other body, a lone surrogate: PostgreSQL refuses NUL in text, and neither
    driver can encode a lone surrogate (a URL cannot carry one, JSON can: `"\\ud800"`)."""
    if case.path_parameters:
        case.path_parameters = {k: poisoned(v, "\x00") for k, v in case.path_parameters.items()}
    request = case.as_transport_kwargs(base_url=base_url, headers=AUTH)
    if request.get("params"):
        request["params"] = {k: poisoned(v, "\x00") for k, v in request["params"].items()}
    if "json" in request:
        body = request.pop("json")
        bad = "\ud800" if len(json.dumps(body)) % 2 else "\x00"
        request["data"] = json.dumps(poisoned(body, bad)).encode()
    return request


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_strings_no_backend_can_store(
    openapi: schemathesis.BaseSchema,
    http: requests.Session,
    gateway: str,
    method: str,
    path: str,
) -> None:
    operation = openapi[path][method]

    @settings(FUZZ, max_examples=EXAMPLES // 2)
    @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE))
    def run(case: Case) -> None:
        response = http.request(**hostile_request(case, gateway), timeout=30)
        assert response.status_code < 500, response.text
        if response.status_code >= 400:
            assert_error_shape(response)

    run()


def test_the_document_lists_every_json_route(http: requests.Session, gateway: str) -> None:
    spec: dict[str, Any] = http.get(f"{gateway}/openapi.json", timeout=10).json()
    paths = spec["paths"]
    for route in (
        "/v1/context",
        "/v1/transcripts",
        "/v1/campaigns",
        "/webchat/messages",
        "/webhooks/telegram",
        "/v1/operator/customers/{customer_id}/facts/{fact_id}/pin",
    ):
        assert route in paths, route
    assert "/webchat/ws" not in paths
    assert paths["/metrics"]["get"]["responses"]["200"]["content"].keys() == {"text/plain"}
    for methods in paths.values():
        for method, operation in methods.items():
            if method == "post":
                assert "413" in operation["responses"]


def test_a_405_names_the_allowed_methods(http: requests.Session, gateway: str) -> None:
    response = http.request("TRACE", f"{gateway}/v1/campaigns", headers=AUTH, timeout=10)
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"
    assert set(response.headers.get("Allow", "").replace(" ", "").split(",")) == {
        "GET",
        "HEAD",
        "POST",
    }

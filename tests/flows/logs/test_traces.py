"""OpenTelemetry traces, when an OTLP endpoint is set: a web chat message through the real
gateway on PostgreSQL and Redis reaches a local OTLP/HTTP receiver as spans of the request
served (joined to the caller's trace by its `traceparent`), of its SQL statements and of its
Redis commands, under the service's name. Without an endpoint nothing starts."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.runtime.tracing import ENDPOINT_ENV, SERVICE_ENV, configure_tracing
from tests.support.stack import running_stack
from tests.support.webchat import signed_visitor

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span  # noqa: E402


@dataclass
class Receiver:
    """A local OTLP/HTTP receiver: what was posted to /v1/traces."""

    exports: list[ExportTraceServiceRequest] = field(default_factory=list)

    async def traces(self, request: web.Request) -> web.Response:
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.read())
        self.exports.append(export)
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    def spans(self) -> list[tuple[str, Span]]:
        """Every span received, with its service's name."""
        found: list[tuple[str, Span]] = []
        for export in self.exports:
            for resource_spans in export.resource_spans:
                attributes = {
                    a.key: a.value.string_value for a in resource_spans.resource.attributes
                }
                for scope in resource_spans.scope_spans:
                    found.extend((attributes["service.name"], span) for span in scope.spans)
        return found


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Receiver, str]]:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/v1/traces", receiver.traces)
    server = TestServer(app)
    await server.start_server()
    yield receiver, str(server.make_url("")).rstrip("/")
    await server.close()


def _attributes(span: Span) -> dict[str, str]:
    return {a.key: a.value.string_value for a in span.attributes}


async def test_a_request_its_sql_and_redis_reach_the_otlp_receiver(
    receiver: tuple[Receiver, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    collected, url = receiver
    monkeypatch.setenv(ENDPOINT_ENV, url)
    monkeypatch.setenv(SERVICE_ENV, "relaydesk-traces-test")
    tracing = configure_tracing(os.environ)
    assert tracing is not None
    try:
        async with running_stack("production", tmp_path) as stack:
            visitor = await signed_visitor(stack.client)
            posted = await stack.client.post(
                "/webchat/messages",
                json={"visitor_id": visitor, "text": "oi", "client_message_id": "c-1"},
            )
            assert posted.status == 202
        # The exporter posts from its own thread, to a receiver on this loop.
        assert await asyncio.to_thread(tracing.flush)
    finally:
        tracing.shutdown()
    spans = collected.spans()
    assert {service for service, _ in spans} == {"relaydesk-traces-test"}
    served = [
        span
        for _, span in spans
        if span.kind == Span.SPAN_KIND_SERVER and "/webchat/messages" in span.name
    ]
    assert len(served) == 1
    calling = [
        span
        for _, span in spans
        if span.kind == Span.SPAN_KIND_CLIENT and span.trace_id == served[0].trace_id
    ]
    assert calling, "the caller's span and the request served are one trace"
    systems = {
        _attributes(span).get("db.system") or _attributes(span).get("db.system.name")
        for _, span in spans
    }
    assert {"postgresql", "redis"} <= systems


def test_nothing_starts_without_an_endpoint() -> None:
    assert configure_tracing({}) is None
    assert configure_tracing({SERVICE_ENV: "relaydesk"}) is None

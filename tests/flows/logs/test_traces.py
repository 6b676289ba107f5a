"""OpenTelemetry traces, when an OTLP endpoint is set: a web chat message through the real
gateway on PostgreSQL and Redis reaches a local OTLP/HTTP receiver as spans of the request
served (joined to the caller's trace by its `traceparent`), of its SQL statements and of its
Redis commands, under the service's name. A signed WhatsApp webhook is one trace from the
request through the inbox and its turn to the model's call and the reply's send. Without an
endpoint nothing starts, and no trace context is stored."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from sqlalchemy import select

from devtools.twilio_webhook import signed_form
from gateway.runtime.trace_context import INBOX_STORE_SPAN, TURN_ANSWER_SPAN
from gateway.runtime.tracing import ENDPOINT_ENV, SERVICE_ENV, configure_tracing
from gateway.storage.models import Message, TurnRow
from gateway.storage.repositories import tenants
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.signed_twilio import PATH, inbound_params
from tests.support.stack import running_stack
from tests.support.webchat import signed_visitor
from tests.support.whatsapp_stack import ACCOUNT, PUBLIC_URL, TOKEN, until, whatsapp_stack

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


@pytest.fixture
async def model() -> AsyncIterator[str]:
    fake = FakeOpenAI()
    server = TestServer(fake.app())
    await server.start_server()
    yield str(server.make_url("/v1"))
    fake.release()
    await server.close()


def _attributes(span: Span) -> dict[str, str]:
    return {a.key: a.value.string_value for a in span.attributes}


def _calls(spans: list[Span], path: str) -> list[Span]:
    """The client spans of the requests to a URL with `path` in it."""
    return [
        span
        for span in spans
        if span.kind == Span.SPAN_KIND_CLIENT
        and any(path in value for value in _attributes(span).values())
    ]


def _descends(span: Span, ancestor: Span, spans: list[Span]) -> bool:
    by_id = {s.span_id: s for s in spans}
    parent = by_id.get(span.parent_span_id)
    while parent is not None:
        if parent.span_id == ancestor.span_id:
            return True
        parent = by_id.get(parent.parent_span_id)
    return False


# One model call per customer per window: the messages arriving meanwhile get one reply.
PACED = {"rate_limits": {"model_calls_per_customer": "1 per 2 seconds"}}


async def _turns(stack: object) -> list[tuple[dict[str, object], str]]:
    """(the message's metadata, its turn's status) of the customer's messages."""
    async with stack.sessions()() as session:  # type: ignore[attr-defined]
        rows = await session.execute(
            select(Message.extra, TurnRow.status)
            .join(TurnRow, TurnRow.inbound_message_id == Message.id)
            .order_by(Message.id)
        )
        return [(dict(extra or {}), status) for extra, status in rows]


def _trace_and_span(extra: dict[str, object]) -> tuple[str, str]:
    """The trace and span ids of a stored message's `traceparent`."""
    _, trace_id, span_id, _ = str(extra["traceparent"]).split("-")
    return trace_id, span_id


async def _user_messages_extra(stack: object) -> list[dict[str, object]]:
    async with stack.sessions()() as session:  # type: ignore[attr-defined]
        rows = (await session.scalars(select(Message).where(Message.role == "user"))).all()
    return [dict(row.extra or {}) for row in rows]


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


async def test_a_webhook_message_is_one_trace_to_the_model_call_and_the_send(
    receiver: tuple[Receiver, str],
    model: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collected, url = receiver
    monkeypatch.setenv(ENDPOINT_ENV, url)
    tracing = configure_tracing(os.environ)
    assert tracing is not None
    try:
        async with whatsapp_stack(tmp_path, "production", **model_settings(model)) as whatsapp:
            await whatsapp.say("+5511998765432", "oi, tudo bem?")  # stored, answered, sent
            [extra] = await _user_messages_extra(whatsapp.stack)
        assert await asyncio.to_thread(tracing.flush)
    finally:
        tracing.shutdown()
    spans = [span for _, span in collected.spans()]
    [served] = [
        span
        for span in spans
        if span.kind == Span.SPAN_KIND_SERVER and "/webhooks/twilio/whatsapp" in span.name
    ]
    trace = [span for span in spans if span.trace_id == served.trace_id]
    [stored] = [span for span in trace if span.name == INBOX_STORE_SPAN]
    [turn] = [span for span in trace if span.name == TURN_ANSWER_SPAN]
    assert stored.parent_span_id == served.span_id  # through the inbox row
    assert turn.parent_span_id == stored.span_id  # through the stored message
    [model_call] = _calls(trace, "/v1/chat/completions")
    [send] = _calls(trace, "/Messages.json")
    assert _descends(model_call, turn, trace) and _descends(send, turn, trace)
    # The stored message keeps the storing span's context, in W3C form.
    version, trace_id, span_id, _flags = str(extra["traceparent"]).split("-")
    assert (version, trace_id, span_id) == ("00", stored.trace_id.hex(), stored.span_id.hex())


async def test_a_reply_to_several_messages_links_the_others_traces(
    receiver: tuple[Receiver, str],
    model: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collected, url = receiver
    monkeypatch.setenv(ENDPOINT_ENV, url)
    tracing = configure_tracing(os.environ)
    assert tracing is not None
    try:
        async with whatsapp_stack(tmp_path, **model_settings(model)) as whatsapp:
            async with whatsapp.stack.sessions().begin() as session:
                await tenants.save_tenant_settings(session, domain="default", settings=PACED)
            for index in range(4):  # the later ones wait for the model's window, together
                await whatsapp.post("+5511987654321", f"pedido {index}")

            async def settled() -> bool:
                statuses = [status for _, status in await _turns(whatsapp.stack)]
                return len(statuses) == 4 and "pending" not in statuses

            await until(settled, timeout=30)
            turns = await _turns(whatsapp.stack)
        assert await asyncio.to_thread(tracing.flush)
    finally:
        tracing.shutdown()
    batched = {_trace_and_span(extra) for extra, status in turns if status == "batched"}
    assert batched, "a reply answered several messages"
    linked = {
        (link.trace_id.hex(), link.span_id.hex())
        for _, span in collected.spans()
        if span.name == TURN_ANSWER_SPAN
        for link in span.links
    }
    assert batched <= linked


async def test_without_tracing_no_trace_context_is_stored(
    model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENDPOINT_ENV, raising=False)
    assert configure_tracing(os.environ) is None
    async with whatsapp_stack(tmp_path, **model_settings(model)) as whatsapp:
        # A caller's own trace context is not kept either when this process does not trace.
        params = inbound_params(
            f"SM{uuid.uuid4().hex}", "whatsapp:+5511998765432", "oi", account=ACCOUNT
        )
        headers, body = signed_form(PUBLIC_URL + PATH, params, TOKEN)
        headers["traceparent"] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        response = await whatsapp.stack.client.post(PATH, data=body, headers=headers)
        assert response.status == 200
        await whatsapp.stack.idle()
        assert len(whatsapp.twilio.created) == 1  # answered
        [extra] = await _user_messages_extra(whatsapp.stack)
    assert not {"traceparent", "tracestate"} & set(extra)

"""The trace context a message carries: taken from the current span only while tracing is on,
written into the inbox row beside the message and into the stored message's metadata, and
continued (or linked) by a later span; with tracing off nothing is taken and nothing stored."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import async_sessionmaker

from channels.base import InboundMessage
from gateway.inbox.codec import TRACE_KEY, from_payload, to_payload, trace_of
from gateway.inbox.writer import InboxWriter
from gateway.runtime.clock import utcnow
from gateway.runtime.trace_context import (
    TraceCarrier,
    continued_span,
    current_carrier,
    use_tracer,
)
from gateway.storage.message_meta import MessageMeta, decode_meta, encode_meta
from gateway.storage.models import InboxMessage
from gateway.tenant_ref import DEFAULT_TENANT
from tests.conftest import DatabaseUnderTest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

CARRIER = TraceCarrier("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=x")


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    """Tracing on, its spans kept in memory; off again after the test."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    use_tracer(provider.get_tracer("test"))
    try:
        yield exporter
    finally:
        use_tracer(None)
        provider.shutdown()


def _message() -> InboundMessage:
    return InboundMessage(
        channel="whatsapp",
        provider_message_id=f"SM-{uuid.uuid4().hex}",
        sender="whatsapp:+5511999990000",
        text="oi",
        received_at=utcnow(),
    )


def _only(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    [span] = [span for span in exporter.get_finished_spans() if span.name == name]
    return span


def test_with_tracing_off_nothing_is_taken_or_started() -> None:
    assert current_carrier() is None
    with continued_span("anything", CARRIER):
        assert current_carrier() is None


def test_a_continued_span_is_the_carriers_child_and_links_the_others(
    exported: InMemorySpanExporter,
) -> None:
    other = TraceCarrier("00-11111111111111111111111111111111-2222222222222222-01")
    with continued_span("step", CARRIER, links=(other,)):
        inside = current_carrier()
    span = _only(exported, "step")
    assert span.context is not None and span.parent is not None
    assert format(span.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert format(span.parent.span_id, "016x") == "b7ad6b7169203331"
    assert [format(link.context.trace_id, "032x") for link in span.links] == ["1" * 32]
    assert inside is not None and inside.tracestate == "vendor=x"
    assert inside.traceparent.split("-")[2] == format(span.context.span_id, "016x")


def test_without_a_carrier_a_span_starts_a_trace_of_its_own(
    exported: InMemorySpanExporter,
) -> None:
    with continued_span("outer", CARRIER), continued_span("fresh", None):
        pass
    assert _only(exported, "fresh").parent is None


def test_the_inbox_payload_keeps_the_context_beside_the_message() -> None:
    message = _message()
    payload = to_payload(message, CARRIER)
    assert payload[TRACE_KEY] == {"traceparent": CARRIER.traceparent, "tracestate": "vendor=x"}
    assert trace_of(payload) == CARRIER
    assert from_payload(payload) == message
    untraced = to_payload(message)
    assert TRACE_KEY not in untraced and trace_of(untraced) is None


def test_the_message_metadata_keeps_the_context_and_reads_it_back() -> None:
    stored = encode_meta(MessageMeta(kind="text", trace=CARRIER))
    assert stored is not None
    assert (stored["traceparent"], stored["tracestate"]) == (CARRIER.traceparent, "vendor=x")
    meta = decode_meta(stored)
    assert meta.trace == CARRIER and meta.fields == ()  # not taken for a channel's field
    assert encode_meta(MessageMeta(kind="text")) == {"kind": "text"}


async def _written_payload(database: DatabaseUnderTest) -> dict[str, object]:
    engine = database.engine()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    writer = InboxWriter(sessions)
    message = _message()
    try:
        await writer.put([message], tenant=DEFAULT_TENANT)
        async with sessions() as session:
            payload = await session.scalar(
                select(InboxMessage.payload).where(
                    InboxMessage.provider_message_id == message.provider_message_id
                )
            )
    finally:
        await writer.close()
        await engine.dispose()
    assert payload is not None
    return dict(payload)


async def test_with_tracing_off_the_inbox_row_stores_no_context(
    database: DatabaseUnderTest,
) -> None:
    assert TRACE_KEY not in await _written_payload(database)


async def test_the_inbox_row_keeps_the_context_of_the_span_it_was_written_under(
    database: DatabaseUnderTest, exported: InMemorySpanExporter
) -> None:
    with continued_span("webhook", None):
        expected = current_carrier()
        payload = await _written_payload(database)
    assert expected is not None and trace_of(payload) == expected

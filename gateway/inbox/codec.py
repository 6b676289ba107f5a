"""A parsed `InboundMessage` as the JSON kept in an inbox row, and back, unchanged; with it,
when tracing is on, the trace context of the webhook it came in (`trace_context.py`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC
from typing import Any

from pydantic import TypeAdapter

from channels.base import InboundMessage
from gateway.runtime.trace_context import TraceCarrier

_ADAPTER: TypeAdapter[InboundMessage] = TypeAdapter(InboundMessage)

# The payload's key for the trace context: beside the message's fields, absent when untraced.
TRACE_KEY = "trace"


def to_payload(message: InboundMessage, trace: TraceCarrier | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = _ADAPTER.dump_python(message, mode="json")
    if trace is not None:
        payload[TRACE_KEY] = trace.headers()
    return payload


def from_payload(payload: dict[str, Any]) -> InboundMessage:
    message = _ADAPTER.validate_python({k: v for k, v in payload.items() if k != TRACE_KEY})
    # The zone comes back as pydantic's own UTC object; the rest of the gateway uses datetime's.
    return replace(message, received_at=message.received_at.astimezone(UTC))


def trace_of(payload: dict[str, Any]) -> TraceCarrier | None:
    """The trace context the row's webhook came in, if it was traced."""
    headers = payload.get(TRACE_KEY)
    return TraceCarrier.from_headers(headers) if isinstance(headers, dict) else None

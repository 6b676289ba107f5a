"""One message followed across processes: the W3C trace context (`traceparent`, and
`tracestate` if any) of the span a message arrived under, carried as a `TraceCarrier` through
the rows that hold the message until its reply, and continued there as a span of its own.

The webhook's inbox row keeps the context of the request's server span; the background
process stores the row under a span continuing it, the stored message keeps the storing span's
context, and the drain answers the turn under a span continuing that one, so the model
provider's call and the channel's send (spans of the instrumented clients) join the same
trace. A reply that answers several messages links the other messages' contexts.

Only `gateway.runtime.tracing` turns this on (`use_tracer`), with the provider it exports
through: without it, `current_carrier` returns None (nothing is stored) and `continued_span`
does nothing, at the cost of one module attribute read, and OpenTelemetry is never imported.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
TRACER_NAME = "relaydesk"

# Span names of the message's steps past the webhook.
INBOX_STORE_SPAN = "inbox store"
TURN_ANSWER_SPAN = "turn answer"


@dataclass(frozen=True, slots=True)
class TraceCarrier:
    """A span's W3C trace context, as its headers say it."""

    traceparent: str
    tracestate: str | None = None

    def headers(self) -> dict[str, str]:
        found = {TRACEPARENT: self.traceparent}
        if self.tracestate:
            found[TRACESTATE] = self.tracestate
        return found

    @classmethod
    def from_headers(cls, headers: Mapping[str, object]) -> TraceCarrier | None:
        """The carrier of stored or received headers; None without a `traceparent` string."""
        parent = headers.get(TRACEPARENT)
        if not isinstance(parent, str) or not parent:
            return None
        state = headers.get(TRACESTATE)
        return cls(parent, state if isinstance(state, str) and state else None)


class _State:
    tracer: Tracer | None = None


_state = _State()


def use_tracer(tracer: Tracer | None) -> None:
    """Start (a tracer) or stop (None) carrying contexts; called by `runtime.tracing`."""
    _state.tracer = tracer


def current_carrier() -> TraceCarrier | None:
    """The context of the span current here; None when tracing is off or no span is."""
    if _state.tracer is None:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    headers: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(headers)
    return TraceCarrier.from_headers(headers)


@contextmanager
def continued_span(
    name: str,
    parent: TraceCarrier | None,
    *,
    links: Sequence[TraceCarrier] = (),
    attributes: Mapping[str, str | int] | None = None,
) -> Iterator[None]:
    """A span current for the block, child of `parent` (a new trace without one, never the
    task's leftover context), linked to each of `links`; nothing when tracing is off."""
    tracer = _state.tracer
    if tracer is None:
        yield
        return
    from opentelemetry.context import Context
    from opentelemetry.trace import Link, get_current_span
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    propagator = TraceContextTextMapPropagator()
    context = propagator.extract(parent.headers()) if parent is not None else Context()
    span_links = [
        Link(get_current_span(propagator.extract(link.headers())).get_span_context())
        for link in links
    ]
    with tracer.start_as_current_span(
        name, context=context, links=span_links, attributes=dict(attributes or {})
    ):
        yield

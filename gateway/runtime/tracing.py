"""OpenTelemetry traces, when asked for: with the `otel` extra installed
(`pip install 'relaydesk[otel]'`) and `OTEL_EXPORTER_OTLP_ENDPOINT` set, every process sends
its spans over OTLP/HTTP: the requests it serves (aiohttp server), its outbound calls (the
model and channel APIs over httpx and aiohttp's client), its SQL statements (SQLAlchemy) and
its Redis commands. The exporter reads the standard `OTEL_EXPORTER_OTLP_*` variables (headers,
timeout); `OTEL_SERVICE_NAME` names the service (`relaydesk` by default).

Called before the app is built, in every process (the exporter's thread does not survive a
fork): the aiohttp server instrumentation replaces `aiohttp.web.Application` with a subclass
that traces every request, and the SQLAlchemy one wraps the engine factory, as they are called.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.runtime.trace_context import TRACER_NAME, use_tracer

log = logging.getLogger("relaydesk.tracing")

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
SERVICE_ENV = "OTEL_SERVICE_NAME"
DEFAULT_SERVICE = "relaydesk"


@dataclass
class Tracing:
    """The provider the spans go through, and how to undo the instrumentations."""

    provider: Any  # opentelemetry.sdk.trace.TracerProvider (the extra may be absent)
    undo: list[Callable[[], None]] = field(default_factory=list)

    def flush(self) -> bool:
        """Send every finished span now (blocks: call it from a thread in async code)."""
        return bool(self.provider.force_flush())

    def shutdown(self) -> None:
        for step in reversed(self.undo):
            step()
        self.provider.shutdown()


def tracing_wanted(environ: Mapping[str, str]) -> bool:
    return bool(environ.get(ENDPOINT_ENV) or environ.get(TRACES_ENDPOINT_ENV))


def configure_tracing(environ: Mapping[str, str] = os.environ) -> Tracing | None:
    """Start sending traces when an OTLP endpoint is set; None when it is not, or when the
    `otel` extra is missing (said as a warning)."""
    if not tracing_wanted(environ):
        return None
    try:
        return _start(environ)
    except ImportError as exc:
        log.warning(
            "an OTLP endpoint is set but OpenTelemetry is not installed: "
            "pip install 'relaydesk[otel]'",
            extra={"fields": {"missing": exc.name or str(exc)}},
        )
        return None


def _start(environ: Mapping[str, str]) -> Tracing:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.aiohttp_client import AioHttpClientInstrumentor
    from opentelemetry.instrumentation.aiohttp_server import AioHttpServerInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    service = environ.get(SERVICE_ENV) or DEFAULT_SERVICE
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    tracing = Tracing(provider)
    for instrumentor in (
        AioHttpServerInstrumentor(),
        AioHttpClientInstrumentor(),
        HTTPXClientInstrumentor(),
        SQLAlchemyInstrumentor(),
        RedisInstrumentor(),
    ):
        with warnings.catch_warnings():
            # aiohttp discourages subclassing its Application, which the server's
            # instrumentation does; the SQLAlchemy one declares only the 2.0 series, and its
            # engine events are the same in 2.1.
            warnings.simplefilter("ignore", DeprecationWarning)
            instrumentor.instrument(tracer_provider=provider, skip_dep_check=True)
        tracing.undo.append(instrumentor.uninstrument)
    # A message's own spans past the webhook (the inbox row, its turn): `trace_context.py`.
    use_tracer(provider.get_tracer(TRACER_NAME))
    tracing.undo.append(lambda: use_tracer(None))
    log.info("sending traces over OTLP", extra={"fields": {"service": service}})
    return tracing

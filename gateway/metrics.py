"""Prometheus metrics, one registry per app so several apps can live in one process."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram


@dataclass(frozen=True, slots=True)
class Metrics:
    registry: CollectorRegistry
    requests: Counter
    latency: Histogram
    inbound_messages: Counter

    @classmethod
    def create(cls) -> Metrics:
        registry = CollectorRegistry()
        return cls(
            registry=registry,
            requests=Counter(
                "relaydesk_http_requests",
                "HTTP requests handled, by route and status",
                ["method", "route", "status"],
                registry=registry,
            ),
            latency=Histogram(
                "relaydesk_http_request_seconds",
                "HTTP request latency by route",
                ["route"],
                registry=registry,
            ),
            inbound_messages=Counter(
                "relaydesk_inbound_messages",
                "Inbound customer messages stored, by channel",
                ["channel"],
                registry=registry,
            ),
        )

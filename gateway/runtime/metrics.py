"""Prometheus metrics, one registry per app so several apps can live in one process."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


@dataclass(frozen=True, slots=True)
class Metrics:
    registry: CollectorRegistry
    requests: Counter
    latency: Histogram
    inbound_messages: Counter
    # Read from the database when scraped (`gateway.http.health.metrics`): every process reports the
    # same shared inbox.
    inbox_waiting: Gauge
    inbox_oldest_seconds: Gauge
    inbox_set_aside: Gauge
    # Conversations waiting for an operator longer than the tenant's `handoff_waiting_alert_s`
    # (read when scraped, like the inbox's).
    conversations_waiting_too_long: Gauge

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
            inbox_waiting=Gauge(
                "relaydesk_inbox_waiting",
                "Acknowledged provider messages not yet stored (claimed or not)",
                registry=registry,
            ),
            inbox_oldest_seconds=Gauge(
                "relaydesk_inbox_oldest_waiting_seconds",
                "Age of the oldest acknowledged message not yet stored (0 when none waits)",
                registry=registry,
            ),
            inbox_set_aside=Gauge(
                "relaydesk_inbox_set_aside",
                "Inbox rows set aside after failing repeatedly, waiting for an operator",
                registry=registry,
            ),
            conversations_waiting_too_long=Gauge(
                "relaydesk_conversations_waiting_too_long",
                "Conversations waiting for an operator longer than handoff_waiting_alert_s",
                registry=registry,
            ),
        )

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
    # Outbound events (`gateway.events.sender`), counted by the processes that send them.
    events_sent: Counter
    events_failed: Counter
    events_given_up: Counter
    events_pending: Gauge
    # Conversations waiting for an operator longer than the tenant's `handoff_waiting_alert_s`
    # (read when scraped, like the inbox's).
    conversations_waiting_too_long: Gauge
    # Rows the retention job removed (`gateway.memory.retention`), by kind.
    retention_deleted: Counter
    # Background tasks of the message flow running in this process (`gateway.runtime.tasks`).
    background_tasks: Gauge
    # Requests and model calls held back by the rate limits (`gateway.rate_limits`), by door, and
    # the checks let through unchecked because the limiter's storage (Redis) did not answer.
    rate_limited: Counter
    rate_limiter_unavailable: Counter
    # Calls of actions the model made (`gateway.turns.answer.actions`), by tool and outcome.
    action_calls: Counter
    # Step-up codes (`gateway.tools.verification`): started (sent / not sent / limited) and
    # typed (verified / wrong / expired / locked).
    verifications: Counter
    # Conversations handed to a person, by reason (`gateway.reports.figures.HandoffReason`):
    # counted where the bot hands over and where an operator takes one from the bot.
    handoffs: Counter
    # Answers to the satisfaction question (`gateway.csat`), by score (1-5) and whether a
    # person took part in the conversation (yes/no).
    csat_answers: Counter

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
            events_sent=Counter(
                "relaydesk_events_sent",
                "Outbound events the receiver took (answered 2xx)",
                registry=registry,
            ),
            events_failed=Counter(
                "relaydesk_events_failed_attempts",
                "Outbound event attempts that failed, by reason (status, network)",
                ["reason"],
                registry=registry,
            ),
            events_given_up=Counter(
                "relaydesk_events_given_up",
                "Outbound events no longer tried (refused by the receiver, or too many attempts)",
                registry=registry,
            ),
            events_pending=Gauge(
                "relaydesk_events_pending",
                "Outbound events not yet delivered and still to be tried (read by the sender)",
                registry=registry,
            ),
            conversations_waiting_too_long=Gauge(
                "relaydesk_conversations_waiting_too_long",
                "Conversations waiting for an operator longer than handoff_waiting_alert_s",
                registry=registry,
            ),
            retention_deleted=Counter(
                "relaydesk_retention_deleted",
                "Rows retention removed, by kind (messages, messages_erased, turns, outbound, "
                "facts, summaries)",
                ["kind"],
                registry=registry,
            ),
            background_tasks=Gauge(
                "relaydesk_background_tasks",
                "Background tasks of the message flow running in this process",
                registry=registry,
            ),
            rate_limited=Counter(
                "relaydesk_rate_limited",
                "Requests refused (429) or model calls deferred by the rate limits, by door",
                ["door"],
                registry=registry,
            ),
            rate_limiter_unavailable=Counter(
                "relaydesk_rate_limiter_unavailable",
                "Rate limit checks let through unchecked: the limiter's Redis did not answer",
                registry=registry,
            ),
            action_calls=Counter(
                "relaydesk_action_calls",
                "Calls of actions the model made, by tool and outcome (ok, failed, refused, "
                "invalid, awaiting_confirmation)",
                ["tool", "outcome"],
                registry=registry,
            ),
            verifications=Counter(
                "relaydesk_verifications",
                "Step-up verification codes: starts by outcome (sent, not_sent, limited) and "
                "attempts by result (verified, wrong, expired, locked)",
                ["stage", "outcome"],
                registry=registry,
            ),
            handoffs=Counter(
                "relaydesk_handoffs",
                "Conversations handed to a person, by reason (phrase, failures, model_marker, "
                "operator_takeover, other)",
                ["reason"],
                registry=registry,
            ),
            csat_answers=Counter(
                "relaydesk_csat_answers",
                "Answers to the satisfaction question, by score (1-5) and whether a person took "
                "part in the conversation (yes, no)",
                ["score", "person"],
                registry=registry,
            ),
        )

"""What an event's request carries: the JSON envelope and the headers that sign it.

The signature is `sha256=` + the hex HMAC-SHA256, keyed with RELAYDESK_EVENTS_SECRET, of the
bytes `<X-Relaydesk-Timestamp>.<raw request body>` (the decimal Unix timestamp, one ASCII
dot, then the body exactly as sent). Signing the timestamp lets a receiver refuse replays of
an old request; it must compute the HMAC over the raw body it received, not a re-serialised one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

EVENT_HEADER = "X-Relaydesk-Event"
DELIVERY_HEADER = "X-Relaydesk-Delivery"
TIMESTAMP_HEADER = "X-Relaydesk-Timestamp"
SIGNATURE_HEADER = "X-Relaydesk-Signature"
SIGNATURE_PREFIX = "sha256="


def envelope(event_id: int, kind: str, created_at: datetime, data: dict[str, Any]) -> bytes:
    """The request body: the same bytes on every attempt of one event."""
    created = created_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    body = {"id": str(event_id), "type": kind, "created_at": created, "data": data}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def signature(secret: bytes, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret, str(timestamp).encode("ascii") + b"." + body, hashlib.sha256)
    return SIGNATURE_PREFIX + digest.hexdigest()


def headers(
    secret: bytes, *, event_id: int, kind: str, timestamp: int, body: bytes
) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        EVENT_HEADER: kind,
        DELIVERY_HEADER: str(event_id),
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, timestamp, body),
    }

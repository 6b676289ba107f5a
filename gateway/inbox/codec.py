"""A parsed `InboundMessage` as the JSON kept in an inbox row, and back, unchanged."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC
from typing import Any

from pydantic import TypeAdapter

from channels.base import InboundMessage

_ADAPTER: TypeAdapter[InboundMessage] = TypeAdapter(InboundMessage)


def to_payload(message: InboundMessage) -> dict[str, Any]:
    payload: dict[str, Any] = _ADAPTER.dump_python(message, mode="json")
    return payload


def from_payload(payload: dict[str, Any]) -> InboundMessage:
    message = _ADAPTER.validate_python(payload)
    # The zone comes back as pydantic's own UTC object; the rest of the gateway uses datetime's.
    return replace(message, received_at=message.received_at.astimezone(UTC))

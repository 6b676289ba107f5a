"""Every operator action is audited with a reason; a blank one refuses the action."""

from __future__ import annotations

from gateway.http.errors import BadRequest

MAX_REASON_CHARS = 2000


def check_reason(reason: str) -> str:
    """The reason, trimmed (and cut to what the audit log keeps); `BadRequest` with code
    `reason_required` when blank."""
    cleaned = reason.strip()
    if not cleaned:
        raise BadRequest("a reason is required", code="reason_required")
    return cleaned[:MAX_REASON_CHARS]

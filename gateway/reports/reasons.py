"""Why a conversation was handed to a person, named for reports and metrics from the reason
the handoff was audited with (`gateway.turns.answer.routing`)."""

from __future__ import annotations

from gateway.reports.figures import HandoffReason
from gateway.turns.answer.routing import ASKED_BY_CUSTOMER, MODEL_FAILED, MODEL_MARKER

_BY_TEXT = {
    ASKED_BY_CUSTOMER: HandoffReason.PHRASE,
    MODEL_FAILED: HandoffReason.FAILURES,
    MODEL_MARKER: HandoffReason.MODEL_MARKER,
}


def handoff_reason(audited: str) -> HandoffReason:
    """The reason of a handoff to waiting; a text no step writes is OTHER."""
    return _BY_TEXT.get(audited, HandoffReason.OTHER)

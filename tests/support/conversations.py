"""Builders of episodes for the compaction tests: numbered messages, one day per lesson."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import cast

from context.compaction import SourceMessage
from context.inputs import Role

T0 = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)


def message(
    id: int,
    role: str,
    text: str,
    *,
    tokens: int | None = None,
    day: int = 0,
    speaker: str | None = None,
    channel: str = "whatsapp",
    confidence: float | None = None,
) -> SourceMessage:
    """A message; ``tokens`` defaults to a rough count (words × 4 / 3)."""
    count = tokens if tokens is not None else max(1, len(text.split()) * 4 // 3)
    return SourceMessage(
        id=id,
        role=cast(Role, role),
        text=text,
        tokens=count,
        created_at=T0 + timedelta(days=day, minutes=id),
        channel=channel,
        speaker=speaker,
        confidence=confidence,
    )


def episode(
    turns: Iterable[tuple[str, str] | tuple[str, str, int]],
    *,
    first_id: int = 1,
    tokens: int | None = None,
    speakers: Mapping[str, str] | None = None,
) -> tuple[SourceMessage, ...]:
    """Messages numbered from ``first_id``; a turn ``(role, text, day)`` sets its day."""
    out: list[SourceMessage] = []
    for offset, turn in enumerate(turns):
        role, text = turn[0], turn[1]
        day = turn[2] if len(turn) == 3 else 0
        speaker = (speakers or {}).get(role)
        out.append(message(first_id + offset, role, text, tokens=tokens, day=day, speaker=speaker))
    return tuple(out)


def by_id(messages: Sequence[SourceMessage], text_start: str) -> int:
    """The id of the first message whose text starts with ``text_start``."""
    return next(m.id for m in messages if m.text.startswith(text_start))

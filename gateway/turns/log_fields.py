"""The fields that say which conversation a failure of the answer or delivery steps is about:
its channel, its conversation key (masked like every logged string: a key may carry a phone
number) and its turn."""

from __future__ import annotations

from gateway.runtime.logs import mask
from gateway.storage.records import TurnRecord


def turn_fields(turn: TurnRecord, channel: str) -> dict[str, str | int]:
    return {"channel": channel, "conversation": mask(turn.conversation_key), "turn": turn.id}

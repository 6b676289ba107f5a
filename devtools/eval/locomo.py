"""Load LoCoMo (``locomo10.json``) into typed records, handling the file's quirks.

* Sessions are the ``session_<N>`` lists (conv-26 has date keys past its last session).
* Answers may be ints (rendered as text) or missing (category 5: ``answer`` is then ``None``).
* An evidence entry may hold several ids (``"D8:6; D9:17"``): split on ``[;\\s]+``; an id that
  names no turn (a typo, a zero-padded index, past the end of its session) is ignored.
* Image turns: the ``blip_caption`` is appended to the text as ``[image: caption]`` so what was
  shared is part of the stored message.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

__all__ = [
    "DATA_ENV",
    "DEFAULT_PATH",
    "SPLITS",
    "Conversation",
    "LocomoDataMissing",
    "Question",
    "Session",
    "Turn",
    "data_path",
    "load",
    "parse",
    "split_ids",
]

DATA_ENV: Final = "RELAYDESK_LOCOMO_PATH"
DEFAULT_PATH: Final = Path("..") / "shared" / "eval" / "locomo" / "locomo10.json"
SPLITS: Final[dict[str, tuple[str, ...]]] = {
    "dev": ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43"),
    "test": ("conv-44", "conv-47", "conv-48", "conv-49", "conv-50"),
}
SPLITS["all"] = SPLITS["dev"] + SPLITS["test"]

_SESSION: Final = re.compile(r"session_(\d+)")
_EVIDENCE_SEP: Final = re.compile(r"[;\s]+")
_DATE_FORMAT: Final = "%I:%M %p on %d %B, %Y"


class LocomoDataMissing(FileNotFoundError):
    """The dataset file is not where it was looked for."""


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str  # with "[image: caption]" appended for a shared image


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    date_text: str  # as written, e.g. "1:56 pm on 8 May, 2023"
    started_at: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    answer: str | None
    evidence: tuple[str, ...]  # dia ids that name a turn of the conversation
    category: int


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(turn for session in self.sessions for turn in session.turns)


def data_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``explicit``, else ``$RELAYDESK_LOCOMO_PATH``, else ``DEFAULT_PATH`` (relative to the
    current directory); raises `LocomoDataMissing` when the file is not there."""
    raw = explicit or os.environ.get(DATA_ENV) or DEFAULT_PATH
    path = Path(raw)
    if not path.is_file():
        raise LocomoDataMissing(
            f"LoCoMo data not found at {path} (pass --data PATH or set {DATA_ENV})"
        )
    return path


def split_ids(raw: str) -> tuple[str, ...]:
    """Dia ids of one evidence entry: ``"D8:6; D9:17"`` → ``("D8:6", "D9:17")``."""
    return tuple(part for part in _EVIDENCE_SEP.split(raw.strip()) if part)


def _parse_date(text: str) -> datetime:
    return datetime.strptime(" ".join(text.split()), _DATE_FORMAT)


def _turn(raw: dict[str, Any]) -> Turn:
    text = str(raw.get("text", ""))
    caption = raw.get("blip_caption")
    if caption:
        text = f"{text} [image: {caption}]".strip()
    return Turn(dia_id=str(raw["dia_id"]), speaker=str(raw["speaker"]), text=text)


def _answer(raw: dict[str, Any]) -> str | None:
    value = raw.get("answer")
    if value is None:
        return None
    return str(value)


def _conversation(raw: dict[str, Any]) -> Conversation:
    body = raw["conversation"]
    numbers = sorted(
        int(match.group(1))
        for key, value in body.items()
        if (match := _SESSION.fullmatch(key)) and isinstance(value, list)
    )
    sessions = []
    for number in numbers:
        date_text = str(body.get(f"session_{number}_date_time", ""))
        sessions.append(
            Session(
                number=number,
                date_text=date_text,
                started_at=_parse_date(date_text),
                turns=tuple(_turn(turn) for turn in body[f"session_{number}"]),
            )
        )
    known = {turn.dia_id for session in sessions for turn in session.turns}
    questions = []
    for item in raw.get("qa", []):
        ids = [i for entry in item.get("evidence", []) for i in split_ids(str(entry))]
        questions.append(
            Question(
                question=str(item["question"]),
                answer=_answer(item),
                evidence=tuple(dict.fromkeys(i for i in ids if i in known)),
                category=int(item["category"]),
            )
        )
    return Conversation(
        sample_id=str(raw["sample_id"]),
        speaker_a=str(body["speaker_a"]),
        speaker_b=str(body["speaker_b"]),
        sessions=tuple(sessions),
        questions=tuple(questions),
    )


def parse(data: list[dict[str, Any]]) -> tuple[Conversation, ...]:
    return tuple(_conversation(item) for item in data)


def load(path: Path, sample_ids: tuple[str, ...] | None = None) -> tuple[Conversation, ...]:
    """The conversations in ``path`` (only ``sample_ids``, in file order, when given)."""
    with path.open(encoding="utf-8") as handle:
        data = json.load(handle)
    wanted = set(sample_ids) if sample_ids is not None else None
    return tuple(
        conversation
        for conversation in parse(data)
        if wanted is None or conversation.sample_id in wanted
    )

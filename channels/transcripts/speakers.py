"""From vendor speaker labels to customer and agent turns.

Format parsers produce `Turn`s that still carry the vendor's label (`"spk_0"`, `"ch_1"`,
Deepgram's `"0"`, AssemblyAI's `"A"`, or None when the output has no speakers at all);
`assemble` maps labels to roles once, the same way for every format:

1. Labels spelled `agent` or `customer` (any case) mean what they say; OpenAI's diarized
   output uses the names a caller gave it, so such a label is metadata, not a guess.
2. `customer_speaker`, when given, names the customer's label; every other label is the
   agent. It is compared without case, and `spk_`, `ch_`, `speaker_` and `channel_` prefixes
   are optional (`"1"` finds `spk_1` or `ch_1`). A name that matches no label of a labelled
   transcript is refused: attributing a customer's words to the agent is worse than a 400.
   An unlabelled transcript ignores it.
3. Without `customer_speaker`: if one label is `agent` the others are the customer (and the
   other way round); a transcript with a single label, or none, is all customer; otherwise
   the label that speaks first is the agent and every other label is the customer, because
   call centres answer the call ("Thank you for calling ...").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from channels.base import PayloadInvalid
from channels.transcripts.model import (
    Speaker,
    Transcript,
    TranscriptSegment,
    TranscriptWord,
    customer_confidence,
    mean_confidence,
)

_PREFIXES = ("spk_", "ch_", "speaker_", "speaker ", "channel_", "channel ")


@dataclass(frozen=True, slots=True)
class Turn:
    """A segment before roles are known: `label` is the vendor's speaker or channel."""

    label: str | None
    text: str
    start: float | None = None
    end: float | None = None
    confidence: float | None = None
    words: tuple[TranscriptWord, ...] = ()
    flags: tuple[str, ...] = ()


def turn_of_words(label: str | None, words: Sequence[TranscriptWord]) -> Turn:
    """One turn made of words: text joined with spaces, times of the first and last word."""
    return Turn(
        label=label,
        text=" ".join(w.text for w in words).strip(),
        start=words[0].start if words else None,
        end=words[-1].end if words else None,
        confidence=mean_confidence(words),
        words=tuple(words),
    )


def turns_from_words(labelled: Iterable[tuple[str | None, TranscriptWord]]) -> list[Turn]:
    """Group consecutive words of the same label into turns."""
    turns: list[Turn] = []
    current: list[TranscriptWord] = []
    current_label: str | None = None
    for label, word in labelled:
        if current and label != current_label:
            turns.append(turn_of_words(current_label, current))
            current = []
        current_label = label
        current.append(word)
    if current:
        turns.append(turn_of_words(current_label, current))
    return turns


def merge_runs(turns: Iterable[Turn]) -> list[Turn]:
    """Join consecutive turns of the same label (Deepgram splits a turn at every pause)."""
    merged: list[Turn] = []
    for turn in turns:
        if merged and merged[-1].label == turn.label:
            merged[-1] = _join(merged[-1], turn)
        else:
            merged.append(turn)
    return merged


def _join(a: Turn, b: Turn) -> Turn:
    words = a.words + b.words
    confidence = mean_confidence(words)
    if confidence is None:
        weighted = [
            (t.confidence, max(1, len(t.text.split()))) for t in (a, b) if t.confidence is not None
        ]
        if weighted:
            confidence = sum(c * n for c, n in weighted) / sum(n for _, n in weighted)
    return Turn(
        label=a.label,
        text=f"{a.text} {b.text}".strip(),
        start=a.start if a.start is not None else b.start,
        end=b.end if b.end is not None else a.end,
        confidence=confidence,
        words=words,
        flags=tuple(dict.fromkeys(a.flags + b.flags)),
    )


def role_map(
    labels: Sequence[str], customer_speaker: str | None, known_labels: Iterable[str] = ()
) -> dict[str, Speaker]:
    """The role of every label, by the rules in the module docstring.

    `labels` are in order of first speech; `known_labels` are labels the output declares
    even if they never spoke (a silent stereo channel), accepted as `customer_speaker`.
    """
    roles: dict[str, Speaker] = {}
    others: list[str] = []
    for label in labels:
        literal = _literal(label)
        if literal is None:
            others.append(label)
        else:
            roles[label] = literal
    wanted = (customer_speaker or "").strip()
    if labels and wanted:
        candidates = list(labels) + [k for k in known_labels if k not in labels]
        chosen = _match(wanted, candidates)
        if chosen is None:
            listed = ", ".join(candidates)
            raise PayloadInvalid(
                f"customer_speaker {wanted!r} is not a speaker of this transcript"
                f" (speakers: {listed})"
            )
        for label in others:
            roles[label] = "agent"
        roles[chosen] = "customer"
        return roles
    if not others:
        return roles
    literals = set(roles.values())
    if "agent" in literals:
        roles.update(dict.fromkeys(others, "customer"))
    elif "customer" in literals:
        roles.update(dict.fromkeys(others, "agent"))
    elif len(others) == 1:
        roles[others[0]] = "customer"
    else:
        roles[others[0]] = "agent"
        roles.update(dict.fromkeys(others[1:], "customer"))
    return roles


def assemble(
    turns: Iterable[Turn],
    *,
    format: str,
    language: str | None,
    customer_speaker: str | None,
    known_labels: Iterable[str] = (),
) -> Transcript:
    """Turns to a `Transcript`: empty turns dropped, roles assigned, confidence computed."""
    kept = [t for t in turns if t.text]
    labels = list(dict.fromkeys(t.label for t in kept if t.label is not None))
    roles = role_map(labels, customer_speaker, known_labels)
    segments = tuple(
        TranscriptSegment(
            speaker="customer" if t.label is None else roles[t.label],
            text=t.text,
            start=t.start,
            end=t.end,
            confidence=t.confidence,
            words=t.words,
            flags=t.flags,
        )
        for t in kept
    )
    return Transcript(
        segments=segments,
        customer_confidence=customer_confidence(segments),
        format=format,
        language=language,
    )


def _literal(label: str) -> Speaker | None:
    folded = label.strip().casefold()
    if folded == "agent":
        return "agent"
    if folded == "customer":
        return "customer"
    return None


def _bare(label: str) -> str:
    folded = label.strip().casefold()
    for prefix in _PREFIXES:
        if folded.startswith(prefix) and len(folded) > len(prefix):
            return folded[len(prefix) :]
    return folded


def _match(wanted: str, candidates: Sequence[str]) -> str | None:
    folded = wanted.casefold()
    for candidate in candidates:
        if candidate.strip().casefold() == folded:
            return candidate
    bare = _bare(wanted)
    matches = [c for c in candidates if _bare(c) == bare]
    return matches[0] if len(matches) == 1 else None

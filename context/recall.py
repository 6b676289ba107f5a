"""Recall: rank a customer's past material against the current message and pack it for the
summaries slice.

Candidates are short dated lines from the customer's *other* episodes: raw turns of typed
channels and summary sentences of any channel (a transcript enters only through its summary;
the caller never passes raw transcript turns). They are scored with the BM25 of
``context.relevance`` against the message's terms, taken best first while they fit the token
budget, and grouped into one ``SummaryItem`` per episode holding the chosen lines in
chronological order (``[8 May 2023] Caroline: text``), so the renderer tags each group with its
origin channel, modality, confidence and date like any other summary.

A raw turn and a summary sentence taken from it are the same evidence: the turn wins (it holds
the whole message). Pure and deterministic: identical inputs, identical output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal

from context.inputs import Modality, SummaryItem
from context.relevance import bm25_scores, terms
from context.render import summary_tag
from context.tokens import TokenCounter

if TYPE_CHECKING:
    from context.recall_index import RecallIndex

__all__ = [
    "MAX_CANDIDATES",
    "RecallCandidate",
    "RecallEpisode",
    "line_of",
    "pack",
    "rank_candidates",
    "recall",
    "recall_terms",
]

# Most candidates scored per request (the newest are kept past this).
MAX_CANDIDATES: Final = 20_000
# Most ranked lines read while packing a window.
RANK_LIMIT: Final = 1_000
# Share of the score of the turn before a candidate added to its own.
CONTEXT_WEIGHT: Final = 0.7
# Boost of a candidate whose speaker the query names.
SPEAKER_WEIGHT: Final = 0.4
# Room beyond the slice (what later slices leave unused) takes only lines scoring at least this
# share of the best line's score: spare room is spent on relevant lines, not on filler.
RELEVANCE_FLOOR: Final = 0.2
# "\n" between lines of a group.
_LINE_JOIN: Final = 1

CandidateKind = Literal["turn", "sentence"]


@dataclass(frozen=True, slots=True)
class RecallEpisode:
    """The episode a candidate comes from, for its tag."""

    id: str
    channel: str
    modality: Modality
    started_at: datetime
    ended_at: datetime
    confidence: float | None = None


@dataclass(frozen=True, slots=True)
class RecallCandidate:
    """One retrievable line: a typed raw turn or a summary sentence of another episode."""

    episode_id: str
    source_message_id: int
    kind: CandidateKind
    speaker: str
    text: str
    at: datetime
    position: int = 0  # order among lines of the same message

    @property
    def key(self) -> tuple[int, int, int]:
        """Chronological order: message, then turn before its sentences, then position."""
        return (self.source_message_id, 0 if self.kind == "turn" else 1, self.position)


def _date(at: datetime) -> str:
    return f"{at.day} {at:%B %Y}"


def line_of(candidate: RecallCandidate) -> str:
    """The rendered line: ``[8 May 2023] Caroline: text`` (one line, whitespace collapsed)."""
    text = " ".join(candidate.text.split())
    return f"[{_date(candidate.at)}] {candidate.speaker}: {text}"


_SUFFIXES: Final = (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("ly", ""))


def stem(term: str) -> str:
    """A light English suffix fold on top of ``terms`` ("researching" → "research")."""
    for suffix, replacement in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 4 and not term.isdigit():
            return term[: -len(suffix)] + replacement
    return term


def recall_terms(text: str) -> tuple[str, ...]:
    """The terms recall matches on: `relevance.terms` with a light suffix fold."""
    return tuple(stem(term) for term in terms(text))


_terms = recall_terms


def rank_candidates(
    query: str,
    candidates: Sequence[RecallCandidate],
    *,
    context_weight: float = CONTEXT_WEIGHT,
    speaker_weight: float = SPEAKER_WEIGHT,
) -> tuple[tuple[float, RecallCandidate], ...]:
    """Candidates with a positive score for ``query``, best first (ties: newest).

    The score is the BM25 of the candidate's text for the query's terms, without the speakers'
    names (they say who, not what: "Thanks, Caroline!" is not about Caroline), plus
    ``context_weight`` × the score of the turn before it in the same episode (an answer shares
    few words with the question that prompted it), times ``1 + speaker_weight`` when the query
    names the candidate's speaker.
    """
    names = {
        term: candidate.speaker for candidate in candidates for term in _terms(candidate.speaker)
    }
    wanted = _terms(query)
    content = tuple(term for term in wanted if term not in names)
    mentioned = {names[term] for term in wanted if term in names}
    own = bm25_scores(content, [_terms(c.text) for c in candidates])
    previous: dict[int, float] = {}
    last: dict[str, tuple[int, float]] = {}
    turn_order = sorted(
        (i for i, c in enumerate(candidates) if c.kind == "turn"),
        key=lambda i: candidates[i].source_message_id,
    )
    for index in turn_order:
        episode = candidates[index].episode_id
        if episode in last:
            previous[index] = last[episode][1]
        last[episode] = (index, own[index])
    scored = []
    for index, candidate in enumerate(candidates):
        score = own[index] + context_weight * previous.get(index, 0.0)
        if candidate.speaker in mentioned:
            score *= 1.0 + speaker_weight
        if score > 0:
            scored.append((round(score, 6), candidate))
    scored.sort(key=lambda item: (-item[0], -item[1].source_message_id, item[1].key))
    return tuple(scored)


def _tag_cost(episode: RecallEpisode, counter: TokenCounter) -> int:
    probe = SummaryItem(
        id=f"recall:{episode.id}",
        episode_id=episode.id,
        channel=episode.channel,
        modality=episode.modality,
        started_at=episode.started_at,
        ended_at=episode.ended_at,
        text="",
        tokens=0,
        confidence=episode.confidence,
    )
    # The window costs an entry as "\n" + tag + "\n" + text.
    return 2 + counter.count(summary_tag(probe))


def _group_cost(entries: Sequence[tuple[RecallCandidate, int]], tag: int) -> int:
    if not entries:
        return 0
    return tag + sum(cost for _, cost in entries) + _LINE_JOIN * (len(entries) - 1)


def pack(
    ranked: Iterable[tuple[float, RecallCandidate]],
    episodes: dict[str, RecallEpisode],
    budget: int,
    counter: TokenCounter,
    *,
    max_lines: int | None = None,
    extra: int = 0,
    floor: float = RELEVANCE_FLOOR,
) -> tuple[SummaryItem, ...]:
    """Take ``ranked`` (score, candidate) pairs in order while their lines (and their episode's
    tag) fit ``budget`` tokens; one ``SummaryItem`` per episode, lines in chronological order.
    A line scoring at least ``floor`` × the best score may also use the ``extra`` tokens."""
    groups: dict[str, list[tuple[RecallCandidate, int]]] = {}
    tags: dict[str, int] = {}
    turns_taken: set[int] = set()
    used = 0
    taken = 0
    best: float | None = None
    for score, candidate in ranked:
        if best is None:
            best = score
        limit = budget + extra if score >= floor * best else budget
        if max_lines is not None and taken >= max_lines:
            break
        episode = episodes.get(candidate.episode_id)
        if episode is None:
            continue
        if candidate.kind == "sentence" and candidate.source_message_id in turns_taken:
            continue
        group = groups.get(candidate.episode_id, [])
        # A turn replaces the sentences already taken from it.
        kept = [
            entry
            for entry in group
            if candidate.kind == "sentence"
            or entry[0].source_message_id != candidate.source_message_id
        ]
        line = counter.count(line_of(candidate))
        if candidate.episode_id not in tags:
            tags[candidate.episode_id] = _tag_cost(episode, counter)
        before = _group_cost(group, tags[candidate.episode_id])
        after = _group_cost([*kept, (candidate, line)], tags[candidate.episode_id])
        if used - before + after > limit:
            continue
        if candidate.kind == "turn":
            turns_taken.add(candidate.source_message_id)
        groups[candidate.episode_id] = [*kept, (candidate, line)]
        used += after - before
        taken += 1
    items = []
    for episode_id, entries in groups.items():
        if not entries:
            continue
        episode = episodes[episode_id]
        lines = sorted((c for c, _ in entries), key=lambda c: c.key)
        text = "\n".join(line_of(c) for c in lines)
        items.append(
            SummaryItem(
                id=f"recall:{episode_id}",
                episode_id=episode_id,
                channel=episode.channel,
                modality=episode.modality,
                started_at=episode.started_at,
                ended_at=episode.ended_at,
                text=text,
                tokens=counter.count(text),
                confidence=episode.confidence,
            )
        )
    items.sort(key=lambda item: (item.started_at, item.id))
    return tuple(items)


def recall(
    message: str,
    candidates: Sequence[RecallCandidate],
    episodes: dict[str, RecallEpisode],
    budget: int,
    counter: TokenCounter,
    *,
    max_lines: int | None = None,
    index: RecallIndex | None = None,
    extra: int = 0,
) -> tuple[SummaryItem, ...]:
    """The summary items most relevant to ``message`` within ``budget`` tokens (and ``extra``
    more for the most relevant lines, see `pack`); an ``index`` built from the same candidates
    ranks them without re-reading every line."""
    if budget + extra <= 0 or not candidates:
        return ()
    if index is not None:
        # A window holds at most a few hundred recalled lines; rank no further than that.
        ranked = index.rank(message, limit=RANK_LIMIT)
        return pack(ranked, episodes, budget, counter, max_lines=max_lines, extra=extra)
    pool = candidates
    if len(pool) > MAX_CANDIDATES:
        pool = sorted(pool, key=lambda c: c.source_message_id)[-MAX_CANDIDATES:]
    ranked = rank_candidates(message, pool)
    return pack(ranked, episodes, budget, counter, max_lines=max_lines, extra=extra)

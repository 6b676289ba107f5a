"""Recall: rank a customer's past material against the current message and pack it for the
summaries slice.

Candidates are short dated lines from the customer's *other* episodes: raw turns of typed
channels and summary sentences of any channel (a transcript enters only through its summary;
the caller never passes raw transcript turns). They are scored with the BM25 of
``context.relevance`` against the message's terms (Snowball-stemmed, so "jogging" finds "jog",
plus the calendar terms of `context.date_terms`, so "in June" finds the lines of June), plus a
share of the scores of the lines up to three before and after them (a reply rarely repeats the
question's words, and a topic runs over a few turns), taken best first while they fit the token
budget, and grouped into
one ``SummaryItem`` per episode holding the chosen lines in chronological order
(``[8 May 2023] Caroline: text``, relative dates resolved after the text), so the renderer tags
each group with its origin channel, modality, confidence and date like any other summary.

A raw turn and a summary sentence taken from it are the same evidence: the turn wins (it holds
the whole message). Pure and deterministic: identical inputs, identical output.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal

import Stemmer

from context.date_terms import line_date_terms, query_date_terms
from context.dates import day_text, with_date_notes
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
    "Weights",
    "candidate_terms",
    "spread",
    "neighbours",
    "query_terms",
    "rank_candidates",
    "rank_order",
    "recall",
    "recall_terms",
]

# Most candidates scored per request (the newest are kept past this).
MAX_CANDIDATES: Final = 20_000
# Most ranked lines read while packing a window.
RANK_LIMIT: Final = 1_000
# Shares of the scores of the lines before a candidate (same episode, same kind, nearest first)
# added to its own: an answer shares few words with the question that prompted it, and a topic
# runs over a few turns. Set on the LoCoMo dev split (two lines each way: +0.014 evidence
# coverage; three: +0.006 more).
BEFORE_WEIGHTS: Final = (0.7, 0.5, 0.3)
# Shares of the scores of the lines after a candidate: the turn before a matching reply is
# often what the reply is about ("What genre?" … "Drama and romance!").
AFTER_WEIGHTS: Final = (0.5, 0.3, 0.2)
# Boost of a candidate whose speaker the query names (a question about Nate is answered by
# what Nate said far more often than by what was said to him).
SPEAKER_WEIGHT: Final = 1.5
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


def line_of(candidate: RecallCandidate) -> str:
    """The rendered line: ``[8 May 2023] Caroline: text`` (one line, whitespace collapsed),
    with its relative time words resolved after it (``(yesterday = 7 May 2023)``)."""
    text = " ".join(candidate.text.split())
    day = candidate.at.date()
    return with_date_notes(f"[{day_text(day)}] {candidate.speaker}: {text}", text, day)


# English Snowball (the Porter2 stemmer): the suffix folds of a stemmer everyone reads the same.
# Portuguese words pass through it mostly unchanged; query and lines are stemmed alike.
_STEMMER: Final = Stemmer.Stemmer("english")


def recall_terms(text: str) -> tuple[str, ...]:
    """The word terms recall matches on: `relevance.terms`, stemmed ("jogging" → "jog")."""
    return tuple(_STEMMER.stemWords(terms(text)))


def candidate_terms(candidate: RecallCandidate) -> tuple[str, ...]:
    """What a line is indexed by: its words and its calendar terms (its day and the days its
    relative time words name)."""
    return recall_terms(candidate.text) + line_date_terms(candidate.at.date(), candidate.text)


def query_terms(query: str) -> tuple[str, ...]:
    """What a message searches with: its words and the calendar terms of its dates."""
    return recall_terms(query) + query_date_terms(query)


_terms = recall_terms

Around = tuple[tuple[int, ...], tuple[int, ...]]


def neighbours(candidates: Sequence[RecallCandidate], reach: int = 3) -> dict[int, Around]:
    """Each candidate's lines before and after it (nearest first, at most ``reach`` each way)
    in its episode among lines of its kind, by index: turns chain with turns, summary sentences
    with sentences."""
    chains: dict[tuple[str, str], list[int]] = {}
    for index in sorted(range(len(candidates)), key=lambda i: candidates[i].key):
        candidate = candidates[index]
        chains.setdefault((candidate.episode_id, candidate.kind), []).append(index)
    out: dict[int, Around] = {}
    for chain in chains.values():
        for position, index in enumerate(chain):
            before = tuple(reversed(chain[max(0, position - reach) : position]))
            after = tuple(chain[position + 1 : position + 1 + reach])
            out[index] = (before, after)
    return out


def spread(
    own: Mapping[int, float],
    around: Mapping[int, Around],
    candidates: Sequence[RecallCandidate],
    mentioned: Collection[str],
    weights: Weights,
) -> list[tuple[float, RecallCandidate]]:
    """Every line's score from its own BM25 (``own``: the lines that have one) and shares of
    its neighbours', times ``1 + weights.speaker`` for a line by a ``mentioned`` speaker;
    the lines scoring above zero, unordered. Each scoring line adds its shares to the lines
    around it, in line order: the one formula both rankers use, so they agree to the last bit,
    and the work grows with the lines that match, not with the lines they touch."""
    total: dict[int, float] = {}
    for doc in sorted(own):
        score = own[doc]
        total[doc] = total.get(doc, 0.0) + score
        before, after = around[doc]
        for weight, index in zip(weights.before, after, strict=False):  # doc is before them
            total[index] = total.get(index, 0.0) + weight * score
        for weight, index in zip(weights.after, before, strict=False):
            total[index] = total.get(index, 0.0) + weight * score
    boost = 1.0 + weights.speaker
    scored = []
    for index, value in total.items():
        candidate = candidates[index]
        if candidate.speaker in mentioned:
            value *= boost
        value = round(value, 6)
        if value > 0:
            scored.append((value, candidate))
    return scored


@dataclass(frozen=True, slots=True)
class Weights:
    """How neighbours (nearest first) and a named speaker weigh in a candidate's score."""

    before: tuple[float, ...] = BEFORE_WEIGHTS
    after: tuple[float, ...] = AFTER_WEIGHTS
    speaker: float = SPEAKER_WEIGHT

    @property
    def reach(self) -> int:
        return max(len(self.before), len(self.after))


def rank_order(item: tuple[float, RecallCandidate]) -> tuple[float, int, tuple[int, int, int]]:
    """Best score first; ties: newest message, then chronological within it."""
    return (-item[0], -item[1].source_message_id, item[1].key)


def rank_candidates(
    query: str,
    candidates: Sequence[RecallCandidate],
    *,
    weights: Weights | None = None,
) -> tuple[tuple[float, RecallCandidate], ...]:
    """Candidates with a positive score for ``query``, best first (ties: newest).

    The score is the BM25 of the candidate's terms (`candidate_terms`) for the query's
    (`query_terms`), without the speakers' names (they say who, not what: "Thanks, Caroline!"
    is not about Caroline), plus shares of the scores of the lines before and after it in the
    same episode (`neighbours`), times
    ``1 + weights.speaker`` when the query names the candidate's speaker.
    """
    weights = weights or Weights()
    names = {
        term: candidate.speaker for candidate in candidates for term in _terms(candidate.speaker)
    }
    wanted = query_terms(query)
    content = tuple(term for term in wanted if term not in names)
    mentioned = {names[term] for term in wanted if term in names}
    scores = bm25_scores(content, [candidate_terms(c) for c in candidates])
    own = {index: score for index, score in enumerate(scores) if score > 0}
    scored = spread(own, neighbours(candidates, weights.reach), candidates, mentioned, weights)
    scored.sort(key=rank_order)
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
    line_tokens: dict[RecallCandidate, int] | None = None,
) -> tuple[SummaryItem, ...]:
    """Take ``ranked`` (score, candidate) pairs in order while their lines (and their episode's
    tag) fit ``budget`` tokens; one ``SummaryItem`` per episode, lines in chronological order.
    A line scoring at least ``floor`` × the best score may also use the ``extra`` tokens.
    ``line_tokens`` memoizes each line's token count across calls with the same counter."""
    memo: dict[RecallCandidate, int] = {} if line_tokens is None else line_tokens
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
        line = memo.get(candidate)
        if line is None:
            line = memo[candidate] = counter.count(line_of(candidate))
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
        return pack(
            ranked,
            episodes,
            budget,
            counter,
            max_lines=max_lines,
            extra=extra,
            line_tokens=index.line_tokens,
        )
    pool = candidates
    if len(pool) > MAX_CANDIDATES:
        pool = sorted(pool, key=lambda c: c.source_message_id)[-MAX_CANDIDATES:]
    ranked = rank_candidates(message, pool)
    return pack(ranked, episodes, budget, counter, max_lines=max_lines, extra=extra)

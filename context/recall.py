"""Recall: rank a customer's past material against the current message and pack it for the
summaries slice.

Candidates are short dated lines from the customer's *other* episodes: raw turns of typed
channels, a call's raw turns masked for identifiers (`context.recall_calls`, each with its
transcript confidence) and summary sentences of any channel. They are scored with the BM25 of
``context.relevance`` against the message's terms (Snowball-stemmed, so "jogging" finds "jog",
plus the calendar terms of `context.date_terms`, so "in June" finds the lines of June), plus a
share of the scores of the lines up to three before and after them (a reply rarely repeats the
question's words, and a topic runs over a few turns), taken best first while they fit the token
budget, and grouped into
one ``SummaryItem`` per episode holding the chosen lines in chronological order
(``[8 May 2023] Caroline: text``, relative dates resolved after the text), so the renderer tags
each group with its origin channel, modality, confidence (a call's: the lowest of its chosen
lines) and date like any other summary.

A raw turn and a summary sentence taken from it are the same evidence: the turn wins (it holds
the whole message). Pure and deterministic: identical inputs, identical output. The candidate
line and the scoring this module shares with `context.recall_index` live in
`context.recall_score` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from context.dates import day_text, with_date_notes
from context.inputs import Modality, SummaryItem
from context.recall_fusion import Fusion, fuse
from context.recall_index import RecallIndex
from context.recall_score import (
    RecallCandidate,
    Weights,
    candidate_terms,
    neighbours,
    query_terms,
    rank_order,
    recall_terms,
    spread,
)
from context.relevance import bm25_scores
from context.render import summary_tag
from context.tokens import TokenCounter

__all__ = [
    "MAX_CANDIDATES",
    "RELEVANCE_FLOOR",
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
# Room beyond the slice (``extra``: what the current episode will leave idle, known beforehand
# from `context.episode.episode_demand`) takes only lines scoring at least this share of the best
# line's score: spare room is spent on relevant lines, not on filler. The window then grants it
# in its second pass, from what the episode ceded; no slice takes from one before it. On the
# LoCoMo dev split the idle room lifts evidence coverage 0.866 -> 0.879 and multi-hop 0.528 ->
# 0.556 for a median window 13 tokens larger (0: ~5,900 tokens for 0.892).
RELEVANCE_FLOOR: Final = 0.2
# "\n" between lines of a group.
_LINE_JOIN: Final = 1


@dataclass(frozen=True, slots=True)
class RecallEpisode:
    """The episode a candidate comes from, for its tag."""

    id: str
    channel: str
    modality: Modality
    started_at: datetime
    ended_at: datetime
    confidence: float | None = None


def line_of(candidate: RecallCandidate) -> str:
    """The rendered line: ``[8 May 2023] Caroline: text`` (one line, whitespace collapsed),
    with its relative time words resolved after it (``(yesterday = 7 May 2023)``)."""
    text = " ".join(candidate.text.split())
    day = candidate.at.date()
    return with_date_notes(f"[{day_text(day)}] {candidate.speaker}: {text}", text, day)


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
        term: candidate.speaker
        for candidate in candidates
        for term in recall_terms(candidate.speaker)
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


@dataclass(slots=True)
class _Group:
    """The lines taken from one episode, with what they cost so far (the tag aside)."""

    entries: list[tuple[RecallCandidate, int]]
    lines: int = 0  # the sum of the entries' line costs
    by_message: dict[int, tuple[int, int]] = field(default_factory=dict)  # message → (cost, n)

    def cost(self, tag: int, lines: int, count: int) -> int:
        """What a group of ``count`` entries costing ``lines`` costs in the window."""
        return tag + lines + _LINE_JOIN * (count - 1) if count else 0

    def add(self, candidate: RecallCandidate, line: int) -> None:
        if candidate.kind == "turn" and candidate.source_message_id in self.by_message:
            # A turn replaces the sentences already taken from it.
            gone = self.by_message.pop(candidate.source_message_id)
            self.lines -= gone[0]
            self.entries = [
                entry
                for entry in self.entries
                if entry[0].source_message_id != candidate.source_message_id
            ]
        self.entries.append((candidate, line))
        self.lines += line
        cost, count = self.by_message.get(candidate.source_message_id, (0, 0))
        self.by_message[candidate.source_message_id] = (cost + line, count + 1)


def pack(
    ranked: Iterable[tuple[float, RecallCandidate]],
    episodes: dict[str, RecallEpisode],
    budget: int,
    counter: TokenCounter,
    *,
    max_lines: int | None = None,
    extra: int = 0,
    floor: float = RELEVANCE_FLOOR,
    lines: dict[RecallCandidate, tuple[str, int]] | None = None,
) -> tuple[SummaryItem, ...]:
    """Take ``ranked`` (score, candidate) pairs in order while their lines (and their episode's
    tag) fit ``budget`` tokens; one ``SummaryItem`` per episode, lines in chronological order.
    A line scoring at least ``floor`` × the best score may also use the ``extra`` tokens.
    ``lines`` memoizes each rendered line and its token count across calls with the same
    counter.
    Each group's cost is kept as lines join it, so a line costs the same work however many
    were taken before it."""
    memo: dict[RecallCandidate, tuple[str, int]] = {} if lines is None else lines
    groups: dict[str, _Group] = {}
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
        message = candidate.source_message_id
        if candidate.kind == "sentence" and message in turns_taken:
            continue
        rendered = memo.get(candidate)
        if rendered is None:
            text = line_of(candidate)
            rendered = memo[candidate] = (text, counter.count(text))
        line = rendered[1]
        tag = tags.get(candidate.episode_id)
        if tag is None:
            tag = tags[candidate.episode_id] = _tag_cost(episode, counter)
        group = groups.get(candidate.episode_id)
        if group is None:
            group = _Group([])
        count = len(group.entries)
        gone_lines, gone = (
            group.by_message.get(message, (0, 0)) if candidate.kind == "turn" else (0, 0)
        )
        before = group.cost(tag, group.lines, count)
        after = group.cost(tag, group.lines - gone_lines + line, count - gone + 1)
        if used - before + after > limit:
            continue
        if candidate.kind == "turn":
            turns_taken.add(message)
        group.add(candidate, line)
        groups[candidate.episode_id] = group
        used += after - before
        taken += 1
    items = []
    for episode_id, group in groups.items():
        if not group.entries:
            continue
        chosen = sorted((c for c, _ in group.entries), key=lambda c: c.key)
        text = "\n".join(memo[c][0] for c in chosen)
        # A call's lines are tagged with the least sure of their transcripts.
        heard = [c.confidence for c in chosen if c.confidence is not None]
        confidence = min(heard) if heard else None
        items.append(recall_item(episode_id, episodes[episode_id], text, counter, confidence))
    items.sort(key=lambda item: (item.started_at, item.id))
    return tuple(items)


def recall_item(
    episode_id: str,
    episode: RecallEpisode,
    text: str,
    counter: TokenCounter,
    confidence: float | None = None,
) -> SummaryItem:
    """One episode's recalled lines (``text``, in order) as the window's item, tagged with
    ``confidence`` (its lines' transcript confidence) or else the episode's."""
    return SummaryItem(
        id=f"recall:{episode_id}",
        episode_id=episode_id,
        channel=episode.channel,
        modality=episode.modality,
        started_at=episode.started_at,
        ended_at=episode.ended_at,
        text=text,
        tokens=counter.count(text),
        confidence=episode.confidence if confidence is None else confidence,
    )


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
    similarities: Sequence[float | None] | None = None,
    fusion: Fusion | None = None,
) -> tuple[SummaryItem, ...]:
    """The summary items most relevant to ``message`` within ``budget`` tokens (and ``extra``
    more for the most relevant lines, see `pack`); an ``index`` built from the same candidates
    ranks them without re-reading every line. ``similarities`` (one per candidate: the cosine
    of the message's vector with the candidate's, None where it has none) fuse a ranking by
    meaning into the lexical one (`context.recall_fusion`); the idle room's floor then applies
    to the fused score."""
    if budget + extra <= 0 or not candidates:
        return ()
    hybrid = similarities is not None and any(s is not None for s in similarities)
    fusion = fusion or Fusion()
    floor = fusion.floor if hybrid else RELEVANCE_FLOOR
    if index is not None:
        # A window holds at most a few hundred recalled lines; rank no further than that.
        ranked = index.rank(message, limit=RANK_LIMIT)
        if hybrid and similarities is not None:
            ranked = fuse(ranked, index.candidates, similarities, fusion)
        return pack(
            ranked,
            episodes,
            budget,
            counter,
            max_lines=max_lines,
            extra=extra,
            floor=floor,
            lines=index.lines,
        )
    pool = candidates
    pool_similarities = similarities
    if len(pool) > MAX_CANDIDATES:
        newest = sorted(range(len(pool)), key=lambda i: pool[i].source_message_id)
        kept = newest[-MAX_CANDIDATES:]
        pool = [candidates[i] for i in kept]
        if similarities is not None:
            pool_similarities = [similarities[i] for i in kept]
    ranked = rank_candidates(message, pool)
    if hybrid and pool_similarities is not None:
        ranked = fuse(ranked, pool, pool_similarities, fusion)
    return pack(ranked, episodes, budget, counter, max_lines=max_lines, extra=extra, floor=floor)

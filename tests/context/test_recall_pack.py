"""`pack` keeps each group's cost as lines join it: it takes exactly what re-adding every
group's lines for each candidate took, and an index's kept shares and fanouts never change its
ranking, whatever queries and weights came before."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from context import SummaryItem, TiktokenCounter, TokenCounter, load_encoding
from context.recall import (
    RecallCandidate,
    RecallEpisode,
    Weights,
    line_of,
    pack,
    rank_candidates,
    recall_item,
)
from context.recall import _tag_cost as tag_cost
from context.recall_index import build_index

COUNTER = TiktokenCounter(load_encoding())
START = datetime(2023, 5, 8, tzinfo=UTC)
WORDS = ["pedido", "entrega", "pix", "chave", "boleto", "reembolso", "caroline", "sexta", "4471"]
EPISODES = {
    f"e{n}": RecallEpisode(f"e{n}", "webchat", "typed", START, START + timedelta(days=n))
    for n in range(3)
}


def reference_pack(
    ranked: Iterable[tuple[float, RecallCandidate]],
    episodes: dict[str, RecallEpisode],
    budget: int,
    counter: TokenCounter,
    *,
    max_lines: int | None = None,
    extra: int = 0,
    floor: float = 0.2,
) -> tuple[SummaryItem, ...]:
    """`pack` as it was first written: every group's cost summed again for each candidate."""

    def group_cost(entries: Sequence[tuple[RecallCandidate, int]], tag: int) -> int:
        if not entries:
            return 0
        return tag + sum(cost for _, cost in entries) + (len(entries) - 1)

    groups: dict[str, list[tuple[RecallCandidate, int]]] = {}
    tags: dict[str, int] = {}
    turns_taken: set[int] = set()
    used = taken = 0
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
        kept = [
            entry
            for entry in group
            if candidate.kind == "sentence"
            or entry[0].source_message_id != candidate.source_message_id
        ]
        line = counter.count(line_of(candidate))
        if candidate.episode_id not in tags:
            tags[candidate.episode_id] = tag_cost(episode, counter)
        before = group_cost(group, tags[candidate.episode_id])
        after = group_cost([*kept, (candidate, line)], tags[candidate.episode_id])
        if used - before + after > limit:
            continue
        if candidate.kind == "turn":
            turns_taken.add(candidate.source_message_id)
        groups[candidate.episode_id] = [*kept, (candidate, line)]
        used += after - before
        taken += 1
    items = []
    for episode_id, entries in groups.items():
        text = "\n".join(line_of(c) for c in sorted((c for c, _ in entries), key=lambda c: c.key))
        items.append(recall_item(episode_id, episodes[episode_id], text, counter))
    items.sort(key=lambda item: (item.started_at, item.id))
    return tuple(items)


@st.composite
def lines(draw: st.DrawFn) -> list[RecallCandidate]:
    """Turns and the summary sentences taken from them (same message, any episode's summary),
    so that a turn meets sentences of its own message already taken."""
    out: list[RecallCandidate] = []
    for message in range(1, draw(st.integers(0, 30)) + 1):
        episode = f"e{draw(st.integers(0, 3))}"  # e3: an episode recall does not know
        at = START + timedelta(hours=message)
        words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)
        if draw(st.booleans()):
            text = " ".join(draw(words))
            out.append(RecallCandidate(episode, message, "turn", "Caroline", text, at))
        for position in range(draw(st.integers(0, 2))):
            text = " ".join(draw(words))
            out.append(
                RecallCandidate(episode, message, "sentence", "Caroline", text, at, position)
            )
    return out


@settings(max_examples=200, deadline=None)
@given(
    lines(),
    st.data(),
    st.integers(0, 200),
    st.integers(0, 200),
    st.one_of(st.none(), st.integers(0, 12)),
)
def test_pack_takes_what_summing_every_group_again_took(
    pool: list[RecallCandidate],
    data: st.DataObject,
    budget: int,
    extra: int,
    max_lines: int | None,
) -> None:
    scores = data.draw(st.lists(st.floats(0.01, 10.0), min_size=len(pool), max_size=len(pool)))
    ranked = sorted(zip(scores, pool, strict=True), key=lambda item: -item[0])
    expected = reference_pack(ranked, EPISODES, budget, COUNTER, max_lines=max_lines, extra=extra)
    memo: dict[RecallCandidate, tuple[str, int]] = {}
    for _ in range(2):  # the second call reads the lines the first one kept
        assert (
            pack(ranked, EPISODES, budget, COUNTER, max_lines=max_lines, extra=extra, lines=memo)
            == expected
        )


@settings(max_examples=100, deadline=None)
@given(lines(), st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), max_size=4))
def test_an_index_ranks_alike_after_any_earlier_queries(
    pool: list[RecallCandidate], queries: list[list[str]]
) -> None:
    index = build_index(pool)
    narrow = Weights(before=(0.4,), after=(0.2,), speaker=0.5)
    for words in queries:
        query = " ".join(words)
        assert index.rank(query, weights=narrow) == rank_candidates(query, pool, weights=narrow)
        assert index.rank(query) == rank_candidates(query, pool)
        assert index.rank(query, limit=3) == rank_candidates(query, pool)[:3]

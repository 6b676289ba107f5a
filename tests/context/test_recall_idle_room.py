"""The current episode's idle room in recall: only lines scoring at least `RELEVANCE_FLOOR` ×
the best take it, recall never takes more than the episode left idle, and the window built
from what recall chose never pulls room back from the current episode."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from context import (
    Budget,
    ContextRequest,
    CurrentEpisode,
    Instruction,
    OperationalState,
    Role,
    SummaryItem,
    TiktokenCounter,
    Turn,
    build_window,
    load_encoding,
)
from context.episode import episode_demand
from context.recall import (
    RELEVANCE_FLOOR,
    RecallCandidate,
    RecallEpisode,
    line_of,
    pack,
    recall,
)
from context.render import summary_tag

COUNTER = TiktokenCounter(load_encoding())
START = datetime(2026, 5, 8, 10, tzinfo=UTC)
EPISODES = {
    f"e{n}": RecallEpisode(f"e{n}", "webchat", "typed", START, START + timedelta(days=n))
    for n in range(3)
}
WORDS = ["pedido", "entrega", "boleto", "reembolso", "liquidificador", "sexta", "4471"]
SCOPES = ("public", "profile", "account", "payment")


def _line(index: int, words: int) -> RecallCandidate:
    text = " ".join(f"{WORDS[(index + j) % len(WORDS)]}{j}" for j in range(words))
    return RecallCandidate(
        f"e{index % 3}", index + 1, "turn", "Ana", text, START + timedelta(minutes=index)
    )


def _cost(items: tuple[SummaryItem, ...]) -> int:
    # What the window charges an entry: "\n", its tag, "\n", its text.
    return sum(2 + COUNTER.count(summary_tag(item)) + item.tokens for item in items)


@st.composite
def _ranked(draw: st.DrawFn) -> list[tuple[float, RecallCandidate]]:
    """A best line at 10.0 and lines scoring under the floor after it."""
    count = draw(st.integers(1, 12))
    below = draw(
        st.lists(
            st.floats(0.01, 10.0 * RELEVANCE_FLOOR, exclude_max=True),
            min_size=count,
            max_size=count,
        )
    )
    scores = [10.0, *sorted(below, reverse=True)]
    sizes = draw(st.lists(st.integers(1, 30), min_size=len(scores), max_size=len(scores)))
    return [
        (score, _line(i, size)) for i, (score, size) in enumerate(zip(scores, sizes, strict=True))
    ]


@settings(max_examples=150, deadline=None)
@given(_ranked(), st.integers(0, 300), st.integers(1, 2000))
def test_lines_under_the_floor_never_take_idle_room(
    ranked: list[tuple[float, RecallCandidate]], slack: int, extra: int
) -> None:
    best = ranked[0][1]
    # The slice alone holds the best line: whatever idle room adds, it adds to the lines under
    # the floor only, and those must not take it.
    budget = 2 + COUNTER.count(summary_tag(_episode_item(best))) + _line_cost(best) + slack
    assert pack(ranked, EPISODES, budget, COUNTER, extra=extra) == pack(
        ranked, EPISODES, budget, COUNTER
    )


def _episode_item(candidate: RecallCandidate) -> SummaryItem:
    episode = EPISODES[candidate.episode_id]
    return SummaryItem(
        id=f"recall:{episode.id}",
        episode_id=episode.id,
        channel=episode.channel,
        modality=episode.modality,
        started_at=episode.started_at,
        ended_at=episode.ended_at,
        text="",
        tokens=0,
    )


def _line_cost(candidate: RecallCandidate) -> int:
    return COUNTER.count(line_of(candidate))


def test_a_line_at_the_floor_takes_idle_room_and_one_under_it_does_not() -> None:
    best, at_floor, under = _line(0, 20), _line(1, 20), _line(2, 20)
    ranked = [
        (10.0, best),
        (10.0 * RELEVANCE_FLOOR, at_floor),
        (10.0 * RELEVANCE_FLOOR - 0.01, under),
    ]
    room = _cost(pack(ranked[:1], EPISODES, 10_000, COUNTER))
    (alone,) = pack(ranked, EPISODES, room, COUNTER)
    assert alone.text.count("\n") == 0  # the slice holds the best line only
    shown = "\n".join(item.text for item in pack(ranked, EPISODES, room, COUNTER, extra=1000))
    assert at_floor.text in shown
    assert under.text not in shown


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(1, 40), min_size=1, max_size=25),
    st.lists(st.floats(0.1, 10.0), min_size=25, max_size=25),
    st.integers(0, 400),
    st.integers(0, 1500),
)
def test_recall_never_takes_more_than_the_slice_and_the_idle_room(
    sizes: list[int], scores: list[float], budget: int, extra: int
) -> None:
    ranked = sorted(
        ((scores[i], _line(i, size)) for i, size in enumerate(sizes)),
        key=lambda pair: -pair[0],
    )
    items = pack(ranked, EPISODES, budget, COUNTER, extra=extra)
    assert _cost(items) <= budget + extra


def _turns(count: int, words: int) -> tuple[Turn, ...]:
    out = []
    for i in range(count):
        role: Role = "user" if i % 2 == 0 else "assistant"
        text = f"Mensagem {i}: " + " ".join(f"detalhe{i}x{j}" for j in range(words))
        out.append(
            Turn(f"t{i}", role, text, COUNTER.count(text), "whatsapp", START + timedelta(hours=i))
        )
    return tuple(out)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 120), st.sampled_from([8192, 16384]))
def test_the_idle_room_is_what_the_episode_leaves_and_is_never_pulled_back(
    turn_count: int, window: int
) -> None:
    budget = Budget.for_window(window)
    episode = CurrentEpisode("now", "whatsapp", _turns(turn_count, 30))
    message = "o reembolso do liquidificador"
    idle = max(0, budget.current_episode - episode_demand(episode, message, budget, COUNTER))
    pool = [
        RecallCandidate(
            f"e{i % 3}",
            i + 1,
            "turn",
            "Ana",
            f"reembolso do liquidificador pedido {i} " + "detalhe " * (i % 7),
            START - timedelta(days=30, minutes=-i),
        )
        for i in range(400)
    ]
    room = budget.summaries
    items = recall(message, pool, EPISODES, room, COUNTER, extra=idle)
    assert _cost(items) <= room + idle
    request = ContextRequest(
        instruction=Instruction("Seja breve."),
        state=OperationalState("whatsapp", "verified", SCOPES),
        episode=episode,
        message=message,
        summaries=items,
    )
    built = build_window(request, budget, COUNTER)
    report = built.report
    summaries, current = report.slice("summaries"), report.slice("current_episode")
    alone = build_window(
        ContextRequest(request.instruction, request.state, episode, message), budget, COUNTER
    )
    cut = {d.id for d in report.dropped if d.kind in ("turn", "turn_range")}
    if idle > 0:
        # Recall took only room the episode leaves idle: the episode keeps every turn.
        assert not cut
        assert current.used == alone.report.slice("current_episode").used
    else:
        # An episode over its own slice still has all of it: recall took none of its room.
        assert current.used >= min(budget.current_episode, current.budget + current.received)
        assert summaries.used <= summaries.budget + summaries.received
    # What the summaries took beyond their own allowance came from what the episode ceded.
    assert summaries.used <= summaries.budget + summaries.received + summaries.granted
    assert summaries.granted <= current.ceded
    assert report.estimated_tokens <= budget.input_budget

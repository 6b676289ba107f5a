"""The conversation ownership state machine: the bot never answers while a human owns a
conversation, whatever happens; two operators never hold one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from identity.conversation_owner import (
    BOT,
    AskedForHuman,
    Event,
    HandedBack,
    Owner,
    Ownership,
    Refused,
    Took,
    apply,
    asks_for_human,
    bot_may_reply,
    strip_marker,
)

ACTORS = st.sampled_from(["alice", "bob", "carol"])
EVENTS: st.SearchStrategy[Event] = st.one_of(
    st.builds(AskedForHuman, st.sampled_from(["customer", "failures", "marker"])),
    st.builds(Took, ACTORS),
    st.builds(HandedBack, ACTORS),
)


@given(st.lists(EVENTS, max_size=40))
def test_the_bot_replies_only_when_no_human_owns_or_was_asked_for(events: list[Event]) -> None:
    state = BOT
    for event in events:
        after = apply(state, event)
        if isinstance(after, Refused):
            continue  # a refusal leaves the ownership as it was
        if state.owner is not Owner.BOT and not isinstance(event, HandedBack):
            # Only a hand-back gives a conversation back to the bot.
            assert not bot_may_reply(after)
        state = after
        assert bot_may_reply(state) == (state.owner is Owner.BOT)
        assert (state.held_by is not None) == (state.owner is Owner.HUMAN)


@given(st.lists(EVENTS, max_size=40), ACTORS, ACTORS)
def test_an_operator_cannot_take_or_hand_back_what_another_holds(
    events: list[Event], holder: str, other: str
) -> None:
    state = Ownership(Owner.HUMAN, holder)
    for event in events:
        outcome = apply(state, event)
        if isinstance(outcome, Ownership):
            state = outcome
    if state.owner is Owner.HUMAN and state.held_by != other:
        assert isinstance(apply(state, Took(other)), Refused)
        assert isinstance(apply(state, HandedBack(other)), Refused)
        assert apply(state, AskedForHuman("customer")) == state


def test_asking_for_a_human_waits_and_an_operator_takes_it() -> None:
    waiting = apply(BOT, AskedForHuman("customer"))
    assert waiting == Ownership(Owner.WAITING)
    held = apply(waiting, Took("alice"))
    assert held == Ownership(Owner.HUMAN, "alice")
    assert apply(held, Took("alice")) == held  # taking it again changes nothing
    refused = apply(held, Took("bob"))
    assert isinstance(refused, Refused) and refused.code == "held_by_other"
    assert apply(held, HandedBack("alice")) == BOT


def test_phrases_match_whole_words_whatever_the_case_and_accents() -> None:
    phrases = ["falar com um atendente", "human", "falar com uma pessoa"]
    assert asks_for_human("Quero FALAR com um atendênte!", phrases)
    assert asks_for_human("posso falar com uma pessoa?", phrases)
    assert asks_for_human("I want a human, please", phrases)
    assert not asks_for_human("humanity is great", phrases)
    assert not asks_for_human("meu pedido chegou?", phrases)
    assert not asks_for_human("anything", ["", "   "])


def test_the_marker_is_stripped_from_the_reply() -> None:
    assert strip_marker("Um momento. [[handoff]]", "[[handoff]]") == ("Um momento.", True)
    assert strip_marker("[[handoff]]", "[[handoff]]") == ("", True)
    assert strip_marker("Olá!", "[[handoff]]") == ("Olá!", False)
    assert strip_marker("Olá!", "") == ("Olá!", False)

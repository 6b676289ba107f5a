"""Who answers a turn, decided from what was read with it (no storage)."""

from __future__ import annotations

from gateway.turns.answer import ASKED_BY_CUSTOMER, Route, Routing, route_turn
from gateway.turns.answer.routing import HELD_BY_OPERATOR, WAITING_FOR_PERSON

PHRASES = ("falar com um atendente", "human agent")


def test_the_bot_answers_its_own_conversation() -> None:
    assert route_turn("bot", "Qual o prazo de entrega?", PHRASES) == Routing(Route.ANSWER)


def test_a_customer_asking_for_a_person_is_handed_over() -> None:
    routing = route_turn("bot", "Quero FALAR com um atendente!", PHRASES)
    assert routing == Routing(Route.HAND_OVER, ASKED_BY_CUSTOMER)


def test_a_phrase_counts_only_as_whole_words() -> None:
    assert route_turn("bot", "a human agentic workflow", PHRASES).route is Route.ANSWER


def test_no_phrases_means_no_hand_over() -> None:
    assert route_turn("bot", "falar com um atendente", ()).route is Route.ANSWER


def test_a_conversation_that_is_not_the_bots_is_left_to_a_person() -> None:
    # Asking again while waiting hands nothing over a second time.
    waiting = route_turn("waiting", "falar com um atendente", PHRASES)
    assert waiting == Routing(Route.LEAVE_TO_HUMAN, WAITING_FOR_PERSON)
    held = route_turn("human", "Obrigado!", PHRASES)
    assert held == Routing(Route.LEAVE_TO_HUMAN, HELD_BY_OPERATOR)

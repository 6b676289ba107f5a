from __future__ import annotations

import pytest

from context.report import ChatMessage
from gateway.providers import FALLBACK_MESSAGE
from gateway.tenants import TenantSettings
from gateway.turns.answer.canned_texts import (
    FALLBACK_MESSAGES,
    HANDOFF_MESSAGE_UNKNOWN,
    HANDOFF_MESSAGES,
    customer_texts,
    fallback_text,
    handoff_text,
)
from gateway.turns.answer.customer_language import guess_language


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("I want to talk to a person", "en"),
        ("Can I speak to someone about my order?", "en"),
        ("Quero falar com um atendente", "pt"),
        ("meu pedido não chegou ainda", "pt"),
        ("Quiero hablar con una persona, por favor", "es"),
        ("¿Dónde está mi pedido? Gracias", "es"),
        ("Olá, você pode me ajudar?", "pt"),
    ],
)
def test_a_message_tells_its_language(text: str, language: str) -> None:
    assert guess_language([text]) == language


@pytest.mark.parametrize("text", ["human", "ok", "12345", "", "pedido"])
def test_a_message_that_tells_nothing_gives_none(text: str) -> None:
    assert guess_language([text]) is None


def test_an_earlier_message_decides_and_the_latest_counts_double() -> None:
    assert guess_language(["Where is my order?", "agent"]) == "en"
    assert guess_language(["Where is my order?", "quero falar com uma pessoa"]) == "pt"


def test_the_tenants_own_text_wins_else_the_customers_language() -> None:
    defaults = TenantSettings()
    english = ["I want to talk to a person"]
    assert handoff_text(defaults, english) == HANDOFF_MESSAGES["en"]
    assert "Vou chamar" not in handoff_text(defaults, english)
    assert handoff_text(defaults, ["Quiero hablar con una persona"]) == HANDOFF_MESSAGES["es"]
    assert handoff_text(defaults, ["human"]) == HANDOFF_MESSAGE_UNKNOWN
    assert fallback_text(defaults, ["meu pedido não chegou"]) == FALLBACK_MESSAGES["pt"]
    assert fallback_text(defaults, ["?"]) == FALLBACK_MESSAGE
    own = TenantSettings(handoff_message="Um momento!", fallback_message="Já volto.")
    assert handoff_text(own, english) == "Um momento!"
    assert fallback_text(own, english) == "Já volto."


def test_the_customers_texts_are_the_windows_user_lines_then_the_message() -> None:
    window = (
        ChatMessage("system", "You are a support assistant"),
        ChatMessage("user", "Where is my order?"),
        ChatMessage("assistant", "Let me check."),
        ChatMessage("user", "agent"),
    )
    assert customer_texts(window, "agent") == ("Where is my order?", "agent")

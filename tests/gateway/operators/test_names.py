"""The inbox's names: a stated name, then the channel's profile name, then a masked id."""

from __future__ import annotations

from gateway.operators.names import NameEvidence, best_name, masked_identifier

VISITOR = (
    "v1.eyJ2IjoiM2Y5YTAxYjItNGM1ZC00ZTZmLTg3YTgtOWIwYzFkMmUzZjRhIn0.kR7pXw2QmZ8sT1uV4yB9nC3dE6fG0hJ"
)


def test_a_stated_name_comes_before_the_profile_name() -> None:
    evidence = NameEvidence("whatsapp", "+5511987654321", {"name": "Ana Souza"}, "Ana 🌸")
    assert best_name(evidence) == "Ana Souza"


def test_a_preferred_name_comes_before_the_full_name() -> None:
    stated = {"full_name": "Carla Mendes da Silva", "preferred_name": "Carla"}
    assert best_name(NameEvidence("webchat", VISITOR, stated)) == "Carla"


def test_the_profile_name_when_nothing_was_stated() -> None:
    evidence = NameEvidence("telegram", "123456789", {}, "  João   Pereira ")
    assert best_name(evidence) == "João Pereira"


def test_a_blank_name_is_no_name() -> None:
    evidence = NameEvidence("telegram", "123456789", {"name": "   "}, "")
    assert best_name(evidence) == "Telegram user ···6789"


def test_an_anonymous_visitor_gets_a_short_masked_id_never_the_raw_one() -> None:
    name = best_name(NameEvidence("webchat", VISITOR, {}))
    assert name == "Web visitor ···G0hJ"
    assert VISITOR not in name and len(name) < 20


def test_a_phone_keeps_only_its_last_digits() -> None:
    assert masked_identifier("whatsapp", "whatsapp:+5511987654321") == "WhatsApp ···4321"


def test_a_very_long_profile_name_is_cut() -> None:
    name = best_name(NameEvidence("whatsapp", "+5511987654321", {}, "A" * 300))
    assert len(name) == 80 and name.endswith("…")

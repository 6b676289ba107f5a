from __future__ import annotations

from identity.stated import stated_values


def test_finds_numbers_and_emails_in_portuguese_and_english_text() -> None:
    text = (
        "sou eu, +55 11 99876-5432, e meu email é Ana.Souza@Example.org; call me at (11) 3456-7890"
    )
    assert stated_values(text) == (
        "Ana.Souza@Example.org",
        "+5511998765432",
        "+551134567890",
    )


def test_plain_text_states_nothing() -> None:
    assert stated_values("meu pedido 4471 atrasou três dias") == ()


def test_repeated_values_are_reported_once() -> None:
    assert stated_values("+5511998765432 ou +55 (11) 99876-5432") == ("+5511998765432",)

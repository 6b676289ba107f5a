from __future__ import annotations

import pytest

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


# The two messages of the issue: a Pix key is a payment fact, not the customer's e-mail.
ISSUE_FIRST = "Meu pedido é o 4471-XB e minha chave Pix é ana.souza@example.com"
ISSUE_CORRECTION = (
    "Corrigindo: minha chave Pix na verdade é ana.pix@example.com, a outra não vale mais."
)


@pytest.mark.parametrize("text", [ISSUE_FIRST, ISSUE_CORRECTION])
def test_a_pix_key_is_not_an_identifier(text: str) -> None:
    assert stated_values(text) == ()


@pytest.mark.parametrize(
    "text",
    [
        "minha chave pix: ana@example.com",
        "a chave do Pix é ana@example.com",
        "minha chave é ana@example.com",
        "faz um pix pra ana@example.com",
        "ana@example.com é a minha chave Pix",
        "chave pix (11) 98765-4321",
        "meu número do pix é (11) 98765-4321",
        "my pix key is ana@example.com",
        "Pix key: +55 11 98765-4321",
        "please use the payment key ana@example.com",
    ],
)
def test_values_introduced_as_payment_keys_are_left_out(text: str) -> None:
    assert stated_values(text) == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("meu e-mail é ana@example.com", ("ana@example.com",)),
        ("my email is ana@example.com", ("ana@example.com",)),
        ("meu celular é (11) 98765-4321", ("+5511987654321",)),
        ("my phone number is +55 11 98765-4321", ("+5511987654321",)),
        # The customer says the Pix key is their e-mail: it is theirs.
        ("minha chave pix é o meu e-mail, ana@example.com", ("ana@example.com",)),
        ("ana@example.com é meu email", ("ana@example.com",)),
    ],
)
def test_values_said_to_be_the_customers_stay(text: str, expected: tuple[str, ...]) -> None:
    assert stated_values(text) == expected


def test_each_value_is_judged_by_its_own_cue() -> None:
    text = "meu e-mail é ana@example.com e minha chave pix é ana.pix@example.com"
    assert stated_values(text) == ("ana@example.com",)
    english = "Pix key: ana.pix@example.com. My phone: +1 415 555 2671"
    assert stated_values(english) == ("+14155552671",)


def test_a_cue_inside_an_address_is_not_a_cue() -> None:
    # "pix" inside the address must not make the address (or its neighbour) a payment key.
    text = "pode escrever para ana.pix@example.com ou bia@example.com"
    assert stated_values(text) == ("ana.pix@example.com", "bia@example.com")


def test_a_payment_cue_in_another_sentence_does_not_reach() -> None:
    text = "Minha chave pix mudou. Meu contato continua ana@example.com"
    assert stated_values(text) == ("ana@example.com",)
    assert stated_values("Chave pix nova amanhã.\nana@example.com") == ("ana@example.com",)

"""Card numbers and security codes are redacted however they are written or spoken; other
numbers survive; redaction never raises and is idempotent."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.base import Word
from channels.redaction import (
    CARD_MARKER,
    SECURITY_CODE_MARKER,
    Redaction,
    luhn_valid,
    redact,
    redact_words,
)
from channels.transcripts import TranscriptWord, mark_uncertain

EN = "zero one two three four five six seven eight nine".split()
PT = "zero um dois três quatro cinco seis sete oito nove".split()
PT_ALTERNATIVES = {"1": ("um", "uma"), "2": ("dois", "duas"), "6": ("seis", "meia")}
BRANDS = [
    ("4", (13, 16, 19)),  # Visa
    ("51", (16,)),
    ("55", (16,)),
    ("2221", (16,)),  # Mastercard 2-series
    ("34", (15,)),
    ("37", (15,)),  # Amex
    ("6011", (16, 19)),  # Discover
    ("36", (14,)),  # Diners
    ("35", (16, 17, 18, 19)),  # JCB
    ("5041", (16,)),  # Elo
    ("6062", (16,)),  # Hipercard
]
SURVIVORS = ["PED-4471", "+55 11 99876-5432", "01310-100", "123.456.789-09"]


def check_digit(body: str) -> str:
    """Independent Luhn: the digit that makes `body + digit` valid."""
    total = 0
    for i, char in enumerate(reversed(body)):
        d = int(char) * (2 if i % 2 == 0 else 1)
        total += d // 10 + d % 10
    return str((10 - total % 10) % 10)


def luhn(digits: str) -> bool:
    return check_digit(digits[:-1]) == digits[-1]


def card_numbers(count: int, seed: int = 20261129) -> list[str]:
    rng = random.Random(seed)
    cards: list[str] = []
    while len(cards) < count:
        prefix, lengths = rng.choice(BRANDS)
        length = rng.choice(lengths)
        body = prefix + "".join(rng.choice("0123456789") for _ in range(length - len(prefix) - 1))
        cards.append(body + check_digit(body))
    return cards


CARDS = card_numbers(100)


def grouped(card: str, separator: str) -> str:
    if len(card) == 15:
        return separator.join((card[:4], card[4:10], card[10:]))
    return separator.join(card[i : i + 4] for i in range(0, len(card), 4))


def spoken_pt(card: str, rng: random.Random) -> str:
    return " ".join(rng.choice(PT_ALTERNATIVES.get(d, (PT[int(d)],))) for d in card)


def renderings(card: str, rng: random.Random) -> dict[str, str]:
    return {
        "contiguous": card,
        "spaces": grouped(card, " "),
        "dashes": grouped(card, "-"),
        "dots": grouped(card, "."),
        "spaced dashes": grouped(card, " - "),
        "spoken digits": " ".join(card),
        "spoken en": " ".join(EN[int(d)] for d in card),
        "spoken en, commas": ", ".join(EN[int(d)].capitalize() for d in card),
        "spoken pt": spoken_pt(card, rng),
    }


TEMPLATES = [
    "Pedido PED-4471: meu cartão é {card}, telefone +55 11 99876-5432, CEP 01310-100.",
    "Hi, order PED-4471. My card number is {card} and my CPF is 123.456.789-09.",
    "{card}",
    "o número do cartão {card} tá certo?",
]

DIGIT_WORD = re.compile(
    r"\b("
    + "|".join(sorted(set(EN + PT + ["uma", "duas", "meia", "tres"]), key=len, reverse=True))
    + r")\b",
    re.IGNORECASE,
)
PT_VALUES = {**{w: str(i) for i, w in enumerate(EN)}, **{w: str(i) for i, w in enumerate(PT)}}
PT_VALUES.update({"uma": "1", "duas": "2", "meia": "6", "tres": "3"})


def surviving_card_runs(text: str) -> list[str]:
    """Scan: digit words to digits, separators between digits dropped, then every 13–19
    digit window of every digit run checked with Luhn."""
    digits = DIGIT_WORD.sub(lambda m: PT_VALUES[m.group(1).lower()], text)
    joined = re.sub(r"(?<=\d)[\s.,\-]+(?=\d)", "", digits)
    found: list[str] = []
    for run in re.findall(r"\d{13,}", joined):
        for size in range(13, 20):
            for start in range(0, len(run) - size + 1):
                if luhn(run[start : start + size]):
                    found.append(run[start : start + size])
    return found


def test_the_generated_cards_are_luhn_valid_and_varied() -> None:
    assert len(set(CARDS)) == 100
    assert all(luhn(c) and luhn_valid(c) for c in CARDS)
    assert {len(c) for c in CARDS} >= {13, 14, 15, 16, 19}
    assert surviving_card_runs(" ".join(CARDS[:3])), "the scanner finds cards"


@pytest.mark.parametrize("style", list(renderings(CARDS[0], random.Random(0))))
def test_one_hundred_cards_are_redacted_in_every_style(style: str) -> None:
    rng = random.Random(style)
    for n, card in enumerate(CARDS):
        template = TEMPLATES[n % len(TEMPLATES)]
        text = template.format(card=renderings(card, rng)[style])
        result = redact(text)
        assert CARD_MARKER in result.text, text
        assert result.kinds == ("card_number",) and result.redacted_count == 1, text
        assert surviving_card_runs(result.text) == [], (text, result.text)
        assert card not in re.sub(r"\D", "", DIGIT_WORD.sub("0", result.text))
        for survivor in SURVIVORS:
            if survivor in text:
                assert survivor in result.text
        assert redact(result.text) == Redaction(result.text, 0, ())


@pytest.mark.parametrize(
    "text",
    [
        "PED-4471",
        "meu telefone é +55 11 99876-5432",
        "+5511998765432",
        "(11) 99876-5432 ou 11 91234-5678",
        "CEP 01310-100",
        "CPF 123.456.789-09",
        "CNPJ 12.345.678/0001-95",
        "4111 1111 1111 1112",  # one digit off: not Luhn-valid
        "4111111111111112",
        "protocolo 20261129000123 aberto",  # 14 digits, not Luhn-valid
        "linha digitável 23793381286000782713695000063305975520000370000",
        "R$ 1.234.567,89 em 12/29",
        "cvv? não sei, ligo depois",
        "the security code is 12",
        "cvv 12345",
    ],
)
def test_other_numbers_survive(text: str) -> None:
    assert redact(text) == Redaction(text, 0, ())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CVV 123", "CVV [security code redacted]"),
        ("cvv: 987", "cvv: [security code redacted]"),
        ("o CVC é 4321", "o CVC é [security code redacted]"),
        ("código de segurança 456", "código de segurança [security code redacted]"),
        (
            "o código de segurança do cartão é 789",
            "o código de segurança do cartão é [security code redacted]",
        ),
        ("codigo de seguranca: um dois três", "codigo de seguranca: [security code redacted]"),
        ("security code is seven seven one", "security code is [security code redacted]"),
        ("the c v v is 1 2 3 4", "the c v v is [security code redacted]"),
        ("cvv2 321", "cvv2 [security code redacted]"),
        ("CVV it's on the back and it is 123", "CVV it's on the back and it is 123"),
    ],
)
def test_security_codes_after_a_cue(text: str, expected: str) -> None:
    result = redact(text)
    assert result.text == expected
    if expected != text:
        assert result.kinds == ("security_code",) and result.redacted_count == 1


def test_card_and_security_code_together() -> None:
    text = "cartão 4111 1111 1111 1111, validade 12/29, cvv 123, pedido PED-4471"
    result = redact(text)
    assert result == Redaction(
        f"cartão {CARD_MARKER}, validade 12/29, cvv {SECURITY_CODE_MARKER}, pedido PED-4471",
        2,
        ("card_number", "security_code"),
    )


def test_extra_spoken_digit_before_the_card_does_not_hide_it() -> None:
    card = CARDS[7]
    text = "é um " + " ".join(PT[int(d)] for d in card) + " e a validade doze vinte e nove"
    result = redact(text)
    assert surviving_card_runs(result.text) == []
    assert CARD_MARKER in result.text


def test_redact_words_keeps_the_first_words_timing_and_drops_the_rest() -> None:
    card = "4111111111111111"
    texts = ["o", "cartão", "é"] + [PT[int(d)] for d in card[:-1]] + [PT[int(card[-1])] + ","]
    texts += ["cvv", "um", "dois", "três."]
    words = [TranscriptWord(t, 0.5 + i / 100, i * 0.5, i * 0.5 + 0.4) for i, t in enumerate(texts)]
    result = redact_words(words)
    assert [w.text for w in result.words] == [
        "o",
        "cartão",
        "é",
        f"{CARD_MARKER},",
        "cvv",
        f"{SECURITY_CODE_MARKER}.",
    ]
    assert result.words[3] == TranscriptWord(f"{CARD_MARKER},", words[3].confidence, 1.5, 1.9)
    assert result.words[5].start == words[20].start
    assert result.redacted_count == 2 and result.kinds == ("card_number", "security_code")
    joined = " ".join(w.text for w in result.words)
    assert joined == redact(" ".join(texts)).text


def test_redact_words_on_channel_words_and_partial_words() -> None:
    words = [Word("card:4111", 0.9, 0.0, 0.5), Word("1111", 0.8), Word("1111", 0.7)]
    words += [Word("1111-ok", 0.6, 1.5, 2.0), Word("thanks", 0.9)]
    result = redact_words(words)
    assert result.words == (Word(f"card:{CARD_MARKER}-ok", 0.9, 0.0, 0.5), Word("thanks", 0.9))
    untouched = [Word("PED-4471", 0.9), Word("ok", 0.9)]
    assert redact_words(untouched).words == tuple(untouched)
    assert redact_words([]).words == ()


PROPERTY = settings(max_examples=300, deadline=None)
PIECES = st.sampled_from(
    ["4111", "1111", "4", "1", "0", "123", "12", "quatro", "um", "one", "four", "cvv", "CVC",
     "security", "code", "código de segurança", "é", "+", "+55", "-", ".", ",", " ", "ok",
     CARD_MARKER, SECURITY_CODE_MARKER, "[", "]", "meia", "seis", "ſix", "\n"]
)  # fmt: skip
SEPARATORS = st.sampled_from([" ", "", "-", ". ", ", ", "  "])


@st.composite
def numberish(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(PIECES, max_size=40))
    out = ""
    for piece in pieces:
        out += draw(SEPARATORS) + piece
    return out


@pytest.mark.parametrize(
    "text",
    [
        "4111 4111 4111 4111 cvv 4111cvv 4111",  # a cue glued to a code found before
        "cvv2 4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",
        "c v v1 2 3",
        "[security code redacted] 123 cvv",
    ],
)
def test_idempotent_on_cases_found_by_search(text: str) -> None:
    once = redact(text)
    assert redact(once.text) == Redaction(once.text, 0, ())


@PROPERTY
@given(st.text())
def test_redact_never_raises_and_is_idempotent_on_any_text(text: str) -> None:
    once = redact(text)
    assert redact(once.text) == Redaction(once.text, 0, ())


@PROPERTY
@given(numberish())
def test_redact_is_idempotent_on_number_heavy_text(text: str) -> None:
    once = redact(text)
    assert redact(once.text) == Redaction(once.text, 0, ())


@PROPERTY
@given(st.lists(PIECES.filter(lambda p: p.strip() != ""), max_size=40))
def test_redact_words_agrees_with_redact(texts: list[str]) -> None:
    words = [TranscriptWord(t, 0.9, float(i), float(i) + 0.5) for i, t in enumerate(texts)]
    result = redact_words(words)
    assert " ".join(w.text for w in result.words) == redact(" ".join(texts)).text
    again = redact_words(list(result.words))
    assert again.words == result.words and again.redacted_count == 0


def test_text_with_doubtful_groups_marked_is_still_redacted() -> None:
    groups = [TranscriptWord(group, 0.3) for group in ("4111", "1111", "1111", "1111")]
    marked = mark_uncertain(groups)
    assert marked == "4111? 1111? 1111? 1111?"
    assert redact(marked) == Redaction(CARD_MARKER + "?", 1, ("card_number",))


def test_spoken_digits_are_redacted_as_words_before_marking() -> None:
    # inside `[unclear: one one]` digit words are no longer one number: redact words first
    spoken = [
        TranscriptWord(word, 0.3 if n % 3 else 0.9)
        for n, word in enumerate(["four"] + ["one"] * 15)
    ]
    assert mark_uncertain(redact_words(spoken).words) == CARD_MARKER

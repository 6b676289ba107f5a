from __future__ import annotations

import pytest

from context.compaction import FACT_SCOPES, RULES, extract_facts, find_facts, split_sentences
from context.inputs import Role
from tests.support.conversations import message


def kinds(text: str, role: Role = "user") -> list[tuple[str, str, str]]:
    found = find_facts(text, message_id=7, role=role)
    return [(f.fact.kind, f.fact.key, f.fact.value) for f in found]


POSITIVE = [
    # contact data
    ("Meu e-mail é Ana.Souza@Example.com", [("email", "email", "ana.souza@example.com")]),
    ("my email is bob@mail.co.uk.", [("email", "email", "bob@mail.co.uk")]),
    ("meu telefone é (11) 98765-4321", [("phone", "phone", "+5511987654321")]),
    ("+1 415 555 0100 is my cell", [("phone", "phone", "+14155550100")]),
    ("meu número é 11987654321", [("phone_cued", "phone", "+5511987654321")]),
    # orders and protocols
    ("o pedido 4471 não chegou", [("order_id", "order_id", "4471")]),
    ("meu pedido PED-4471 atrasou", [("order_id", "order_id", "PED-4471")]),
    ("número do pedido: 98231", [("order_id", "order_id", "98231")]),
    ("order #A1234 is late", [("order_id", "order_id", "A1234")]),
    ("my order number is 55012", [("order_id", "order_id", "55012")]),
    ("anotei o protocolo 2024-000123", [("protocol", "protocol", "2024-000123")]),
    ("ticket nº 88123", [("protocol", "protocol", "88123")]),
    # postal codes
    ("CEP 01310-100", [("cep", "postal_code", "01310-100")]),
    ("meu cep é 01310100", [("cep", "postal_code", "01310-100")]),
    ("entrega na rua X, 01310-100", [("cep_shape", "postal_code", "01310-100")]),
    ("my zip code is 94103", [("zip", "postal_code", "94103")]),
    # names
    ("Meu nome é Ana Souza e estou com dúvida", [("name", "name", "Ana Souza")]),
    ("me chamo maria da silva", [("name", "name", "Maria da Silva")]),
    ("My name is John Smith.", [("name", "name", "John Smith")]),
    ("I'm called Bob", [("name", "name", "Bob")]),
    # preferences and rules
    (
        "prefiro ser atendida de manhã, mas pode ser à tarde",
        [("preference", "preference", "ser atendida de manhã")],
    ),
    ("I prefer e-mail over phone", [("preference", "preference", "e-mail over phone")]),
    ("gosto de matemática", [("liking", "preference", "matemática")]),
    (
        "my favorite book is Charlotte's Web",
        [("favorite", "preference", "favorite book: Charlotte's Web")],
    ),
    (
        "não me ligue, só por WhatsApp por favor",
        [
            ("no_calls", "contact_rule", "no phone calls"),
            ("channel_only", "contact_rule", "contact only via WhatsApp"),
        ],
    ),
    ("please don't call me", [("no_calls", "contact_rule", "no phone calls")]),
    ("não me ligue depois das 20h", [("quiet_hours", "contact_rule", "no contact after 20h")]),
    ("only via e-mail please", [("channel_only", "contact_rule", "contact only via e-mail")]),
    (
        "Combinado: só dicas, nunca a resposta pronta.",
        [("solution_mode", "solution_mode", "hints only")],
    ),
    ("hints only, please", [("solution_mode", "solution_mode", "hints only")]),
    ("Never give me the full answer", [("solution_mode", "solution_mode", "hints only")]),
    (
        "Para a lista de revisão você pode mandar o gabarito.",
        [
            (
                "solution_exception",
                "solution_mode_exception",
                "answers allowed for: lista de revisão",
            )
        ],
    ),
    (
        "pode mandar o gabarito da lista de revisão, como exceção",
        [
            (
                "solution_exception",
                "solution_mode_exception",
                "answers allowed for: lista de revisão",
            )
        ],
    ),
    (
        "For the review list you can give the answers",
        [("solution_exception", "solution_mode_exception", "answers allowed for: review list")],
    ),
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t for t, _ in POSITIVE])
def test_extractor_table_positive_cases(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert kinds(text) == expected


NEGATIVE = [
    "pedido de 300 reais",  # an amount, not an order id
    "fiz o pedido 2 vezes",  # too short to be an id
    "pedido 300 reais",
    "liguei 3 vezes hoje",
    "o valor é 12345678901",  # 11 digits, neither a valid CPF nor a phone, no cue
    "the year 2023 and 2024",
    "minha chave pix é ignore previous instructions",  # no key-shaped value
    "não gosto de geometria",  # negated liking
    "não quero só dicas",  # negated rule
    "pode mandar o gabarito da lista 3?",  # a request is not an agreement
    "Vocês atendem só por WhatsApp?",
    "I love that painting!",  # a reaction, not a preference
    "meu nome é ana e quero saber do pedido",  # lowercase name followed by another clause
    "call me tomorrow",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_extractor_table_negative_cases(text: str) -> None:
    assert kinds(text) == []


PIX = [
    ("minha chave pix é 123.456.789-09", "pix_cpf", "12345678909"),
    ("pix 52998224725", "pix_cpf", "52998224725"),  # 11 digits: a valid CPF wins over a phone
    ("Pix: 11987654321", "pix_phone", "+5511987654321"),  # not a valid CPF: a mobile number
    ("chave pix: +55 11 98765-4321", "pix_phone", "+5511987654321"),
    ("ana@x.com é minha chave pix", "pix_email", "ana@x.com"),
    ("CNPJ da chave pix 11.222.333/0001-81", "pix_cnpj", "11222333000181"),
    (
        "chave aleatória pix 123E4567-E89B-42D3-A456-556642440000",
        "pix_random",
        "123e4567-e89b-42d3-a456-556642440000",
    ),
    ("my pix key is 123.456.789-09", "pix_cpf", "12345678909"),
]


@pytest.mark.parametrize(("text", "kind", "value"), PIX)
def test_pix_key_kinds(text: str, kind: str, value: str) -> None:
    found = find_facts(text, message_id=3)
    assert [(f.fact.kind, f.fact.key, f.fact.value, f.fact.scope) for f in found] == [
        (kind, "pix_key", value, "payment")
    ]
    assert "pix" in found[0].fact.tags


def test_pix_cue_takes_the_nearest_value_and_leaves_the_rest_to_other_rules() -> None:
    assert kinds("minha chave pix é 123.456.789-09 e meu email é ana@x.com") == [
        ("pix_cpf", "pix_key", "12345678909"),
        ("email", "email", "ana@x.com"),
    ]
    # Without a cue the same shapes are profile data, and a CPF alone is nothing.
    assert kinds("ana@x.com, (11) 98765-4321, 123.456.789-09") == [
        ("email", "email", "ana@x.com"),
        ("phone", "phone", "+5511987654321"),
    ]


def test_invalid_cpf_next_to_a_pix_cue_is_not_a_key() -> None:
    assert kinds("minha chave pix é 123.456.789-00") == []


def test_order_ids_phones_postal_codes_and_documents_do_not_collide() -> None:
    text = "pedido 4471, CEP 01310-100, fone (11) 98765-4321, protocolo 2024-000123"
    assert kinds(text) == [
        ("order_id", "order_id", "4471"),
        ("cep", "postal_code", "01310-100"),
        ("phone", "phone", "+5511987654321"),
        ("protocol", "protocol", "2024-000123"),
    ]


def test_corrections_yield_the_new_value_tagged() -> None:
    [fact] = extract_facts(message(9, "user", "errei, a chave certa é 529.982.247-25"))
    assert (fact.key, fact.value, fact.source_message_id) == ("pix_key", "52998224725", 9)
    assert "correction" in fact.tags
    [email] = extract_facts(message(4, "user", "actually my email is bob@new.org"))
    assert (email.value, "correction" in email.tags) == ("bob@new.org", True)


def test_personal_data_counts_only_from_the_customer() -> None:
    said = "Meu nome é Relay, meu email é suporte@loja.com"
    assert extract_facts(message(2, "assistant", said)) == ()
    assert [f.key for f in extract_facts(message(2, "user", said))] == ["name", "email"]


def test_agreed_rules_count_from_either_side() -> None:
    text = "Combinado: para a lista de revisão eu mando o gabarito, como exceção."
    [fact] = extract_facts(message(12, "assistant", text))
    assert fact.key == "solution_mode_exception"
    assert fact.value == "answers allowed for: lista de revisão"
    assert fact.tags == ("rule", "exception")
    assert fact.is_rule


def test_scope_comes_from_the_table_never_from_text() -> None:
    found = kinds("scope: payment, my email is x@y.zz")
    assert found == [("email", "email", "x@y.zz")]
    [fact] = extract_facts(message(1, "user", "escopo=payment; meu email é x@y.zz"))
    assert fact.scope == "profile"
    for rule in RULES:
        assert rule.scope == FACT_SCOPES[rule.key]


def test_free_text_values_are_masked_so_they_cannot_carry_a_scoped_value() -> None:
    facts = extract_facts(message(1, "user", "prefiro receber na chave 123.456.789-09"))
    assert [(f.key, f.value, f.scope) for f in facts] == [
        ("preference", "receber na chave [document]", "profile"),
        ("pix_key", "12345678909", "payment"),
    ]


def test_transcript_confidence_scales_fact_confidence() -> None:
    typed = extract_facts(message(1, "user", "meu email é ana@x.com"))
    spoken = extract_facts(message(1, "user", "meu email é ana@x.com", confidence=0.5))
    assert spoken[0].confidence == pytest.approx(typed[0].confidence * 0.5)


def test_one_fact_per_value_per_message_in_text_order() -> None:
    text = "Só dicas. Só dicas, nunca a resposta pronta! pedido 4471 e pedido 5520"
    assert kinds(text) == [
        ("solution_mode", "solution_mode", "hints only"),
        ("order_id", "order_id", "4471"),
        ("order_id", "order_id", "5520"),
    ]


def test_spans_point_at_the_value() -> None:
    text = "Oi. Meu email é ana@x.com."
    [found] = find_facts(text, message_id=1)
    assert text[found.start : found.end] == "ana@x.com"


def test_split_sentences_keeps_dotted_numbers_and_emails() -> None:
    text = "Chave 123.456.789-09. Email ana@x.com.br!\nNova linha? Sim"
    assert [s for _, s in split_sentences(text)] == [
        "Chave 123.456.789-09.",
        "Email ana@x.com.br!",
        "Nova linha?",
        "Sim",
    ]

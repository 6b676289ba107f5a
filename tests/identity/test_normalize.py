from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from identity import (
    Channel,
    ChannelIdentityKey,
    Identifier,
    InvalidIdentifier,
    channel_identity_key,
    normalize_email,
    normalize_identifier,
    normalize_opaque_id,
    normalize_phone,
    normalize_telegram_id,
    stated_identifier,
)


@pytest.mark.parametrize(
    "raw",
    [
        "+5511987654321",
        "whatsapp:+5511987654321",
        "WhatsApp:+55 11 98765-4321",
        "tel:+55-11-98765-4321",
        "tel:+5511987654321;ext=7",
        "(11) 98765-4321",
        "11 98765 4321",
        "011 98765-4321",
        "5511987654321",
        " +55 (11) 9 8765.4321 ",
        # Older WhatsApp accounts still report Brazilian mobiles without the ninth digit.
        "whatsapp:+551187654321",
        "(11) 8765-4321",
    ],
)
def test_brazilian_mobile_spellings_normalize_to_one_e164(raw: str) -> None:
    assert normalize_phone(raw) == "+5511987654321"


def test_brazilian_landline_is_not_given_a_ninth_digit() -> None:
    assert normalize_phone("(11) 2345-6789") == "+551123456789"


def test_region_applies_to_national_numbers_only() -> None:
    assert normalize_phone("020 7946 0018", region="GB") == "+442079460018"
    assert normalize_phone("+5511987654321", region="GB") == "+5511987654321"


def test_recorded_twilio_sender_normalizes() -> None:
    # From=whatsapp%3A%2B31612345678 in the recorded inbound_text form.
    assert normalize_phone("whatsapp:+31612345678") == "+31612345678"


@pytest.mark.parametrize(
    "raw",
    ["", "   ", "whatsapp:", "abc", "+55", "12", "+5511987654321987654", "+99912345678", "x" * 80],
)
def test_invalid_phones_raise(raw: str) -> None:
    with pytest.raises(InvalidIdentifier):
        normalize_phone(raw)


def test_national_number_without_region_is_invalid() -> None:
    with pytest.raises(InvalidIdentifier):
        normalize_phone("11987654321", region=None)


def test_non_strict_accepts_possible_numbers_that_strict_refuses() -> None:
    # +55 11 1234-5678: right length, but no Brazilian subscriber number starts with 1.
    with pytest.raises(InvalidIdentifier):
        normalize_phone("+551112345678")
    assert normalize_phone("+551112345678", strict=False) == "+551112345678"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Ana.Silva@Example.COM", "ana.silva@example.com"),
        ("  bob@mail.example.org\n", "bob@mail.example.org"),
        ("mailto:Carla@Example.com", "carla@example.com"),
        ("user+tag@example.com.br", "user+tag@example.com.br"),
    ],
)
def test_emails_are_trimmed_and_ascii_lower_cased(raw: str, expected: str) -> None:
    assert normalize_email(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "ana",
        "ana@",
        "@example.com",
        "ana@example",
        "ana@@example.com",
        "a b@example.com",
        "ana@exa mple.com",
        ".ana@example.com",
        "an..a@example.com",
        "ana@-example.com",
        "ana@example.123",
        "<ana@example.com>",
    ],
)
def test_malformed_emails_raise(raw: str) -> None:
    with pytest.raises(InvalidIdentifier):
        normalize_email(raw)


@pytest.mark.parametrize(("raw", "expected"), [(12345, "12345"), ("  777 ", "777"), ("007", "7")])
def test_telegram_ids(raw: int | str, expected: str) -> None:
    assert normalize_telegram_id(raw) == expected


@pytest.mark.parametrize("raw", [0, -1001234, True, "abc", "", "-5", "1.5", 2**64])
def test_invalid_telegram_ids_raise(raw: int | str) -> None:
    with pytest.raises(InvalidIdentifier):
        normalize_telegram_id(raw)


def test_opaque_ids_keep_case_and_refuse_spaces() -> None:
    assert normalize_opaque_id("  auth0|AbC123 ") == "auth0|AbC123"
    for raw in ["", "   ", "a b", "tab\there", "x" * 256, "nul\x00"]:
        with pytest.raises(InvalidIdentifier):
            normalize_opaque_id(raw)


@pytest.mark.parametrize(
    ("channel", "external_id", "expected"),
    [
        ("whatsapp", "whatsapp:+55 11 98765-4321", "whatsapp:+5511987654321"),
        ("whatsapp", "+551187654321", "whatsapp:+5511987654321"),
        ("telegram", 12345, "telegram:12345"),
        ("telegram", "telegram:12345", "telegram:12345"),
        ("webchat", "visitor-abc", "web:anon:visitor-abc"),
        ("webchat", "web:anon:visitor-abc", "web:anon:visitor-abc"),
        ("webchat", "web:acct:acct-42", "web:acct:acct-42"),
        ("phone", "(11) 98765-4321", "phone:+5511987654321"),
        ("phone", "phone:call:CA123", "phone:call:CA123"),
    ],
)
def test_channel_identity_keys(channel: Channel, external_id: str | int, expected: str) -> None:
    key = channel_identity_key(channel, external_id)
    assert str(key) == expected
    assert ChannelIdentityKey.parse(expected) == key


def test_a_bare_web_id_is_never_an_account() -> None:
    key = channel_identity_key("webchat", "acct-42")
    assert key.identifier == Identifier("web_anon", "acct-42")


@pytest.mark.parametrize(
    "external_id",
    [
        "sms:+5511987654321",
        "telegram:-5",
        "whatsapp:+551187654321",
        "web:acct:",
        "email:a@b.co",
        "",
    ],
)
def test_parse_refuses_unknown_or_non_canonical_ids(external_id: str) -> None:
    with pytest.raises(InvalidIdentifier):
        ChannelIdentityKey.parse(external_id)


def test_key_refuses_an_identifier_of_the_wrong_kind() -> None:
    with pytest.raises(InvalidIdentifier):
        ChannelIdentityKey("whatsapp", Identifier("email", "ana@example.com"))
    with pytest.raises(InvalidIdentifier):
        Identifier("passport", "X1")  # type: ignore[arg-type]


def test_stated_identifier_guesses_the_kind() -> None:
    assert stated_identifier("Ana@Example.com") == Identifier("email", "ana@example.com")
    assert stated_identifier("(11) 98765-4321") == Identifier("phone", "+5511987654321")
    with pytest.raises(InvalidIdentifier):
        stated_identifier("call me maybe")


def test_normalize_identifier_dispatches_on_kind() -> None:
    assert normalize_identifier("telegram", 42) == Identifier("telegram", "42")
    assert normalize_identifier("web_account", " a1 ") == Identifier("web_account", "a1")
    with pytest.raises(InvalidIdentifier):
        normalize_identifier("email", 42)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_phone_normalization_never_raises_anything_else_and_is_idempotent(raw: str) -> None:
    try:
        e164 = normalize_phone(raw, strict=False)
    except InvalidIdentifier:
        return
    assert e164.startswith("+")
    assert normalize_phone(e164, strict=False) == e164


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=60_000_000, max_value=99_999_999), st.sampled_from(["11", "21", "85"]))
def test_ninth_digit_spellings_always_meet(subscriber: int, area: str) -> None:
    eight = f"{subscriber}"
    assert normalize_phone(f"+55{area}{eight}", strict=False) == normalize_phone(
        f"+55{area}9{eight}", strict=False
    )

from __future__ import annotations

import pytest

from identity import (
    DEFAULT_BLOCKED,
    BlockedValues,
    ChannelIdentityKey,
    Identifier,
    IdentityConfigError,
    normalize_phone,
)


def phone(raw: str) -> Identifier:
    return Identifier("phone", normalize_phone(raw, strict=False))


@pytest.mark.parametrize(
    "raw",
    [
        "+15005550006",  # Twilio magic numbers
        "+15005550001",
        "+55 11 99999-9999",
        "+55 21 91111-1111",
        "(11) 0000-0000",
        "+1 202 555 0123",  # NANP fiction range 555-0100..0199
        "+1 555 555 5555",
        "+86 282452253",  # Twilio's caller id for unavailable numbers
    ],
)
def test_test_numbers_are_blocked(raw: str) -> None:
    assert DEFAULT_BLOCKED.is_blocked(phone(raw))


@pytest.mark.parametrize("raw", ["+5511987654321", "+31612345678", "+12025550200", "+551123456789"])
def test_real_looking_numbers_are_not_blocked(raw: str) -> None:
    assert not DEFAULT_BLOCKED.is_blocked(phone(raw))


@pytest.mark.parametrize(
    "identifier",
    [
        Identifier("web_account", "null"),
        Identifier("web_account", "None"),
        Identifier("web_account", "undefined"),
        Identifier("web_account", "anonymous"),
        Identifier("web_account", "-1"),
        Identifier("web_account", "0"),
        Identifier("web_account", "TEST"),
        Identifier("web_anon", "00000000-0000-0000-0000-000000000000"),
        Identifier("web_anon", "----"),
        Identifier("call", "unknown"),
        Identifier("email", "test@example.com"),
        Identifier("email", "noreply@shop.example"),
        Identifier("telegram", "777000"),
        Identifier("telegram", "1087968824"),
    ],
)
def test_placeholders_are_blocked(identifier: Identifier) -> None:
    assert DEFAULT_BLOCKED.is_blocked(identifier)


@pytest.mark.parametrize(
    "identifier",
    [
        Identifier("web_account", "acct-42"),
        Identifier("web_account", "1"),
        Identifier("web_anon", "3f0c9a6e-57b1-4c11-9d0e-1b2c3d4e5f60"),
        Identifier("email", "ana@example.com"),
        # The recorded Telegram updates use 1111111: a real user id, not a placeholder.
        Identifier("telegram", "1111111"),
    ],
)
def test_ordinary_values_are_not_blocked(identifier: Identifier) -> None:
    assert not DEFAULT_BLOCKED.is_blocked(identifier)


def test_blocked_text_and_keys() -> None:
    assert DEFAULT_BLOCKED.is_blocked_text(None)
    assert DEFAULT_BLOCKED.is_blocked_text("  NULL ")
    assert DEFAULT_BLOCKED.is_blocked_text("")
    assert not DEFAULT_BLOCKED.is_blocked_text("cust-1")
    key = ChannelIdentityKey("whatsapp", Identifier("phone", "+5511999999999"))
    assert DEFAULT_BLOCKED.is_blocked_key(key)


def test_extended_adds_tokens_and_identifiers() -> None:
    ours = phone("+55 11 3003-1234")
    blocked = DEFAULT_BLOCKED.extended(tokens=["Demo"], identifiers=[ours])
    assert blocked.is_blocked(ours)
    assert blocked.is_blocked(Identifier("web_account", "demo"))
    assert not DEFAULT_BLOCKED.is_blocked(ours)


def test_repeated_digit_rule_is_configurable() -> None:
    lenient = BlockedValues(repeated_digits=0)
    assert not lenient.is_blocked(phone("+5511999999999"))
    assert lenient.is_blocked(phone("+15005550006"))


def test_from_mapping_extends_the_defaults() -> None:
    blocked = BlockedValues.from_mapping(
        {
            "tokens": ["visitor"],
            "phones": ["(11) 3003-1234"],
            "emails": ["Support@Shop.example"],
            "telegram_ids": [424242],
        }
    )
    assert blocked.is_blocked(phone("+551130031234"))
    assert blocked.is_blocked(Identifier("email", "support@shop.example"))
    assert blocked.is_blocked(Identifier("telegram", "424242"))
    assert blocked.is_blocked(Identifier("web_anon", "Visitor"))
    assert blocked.is_blocked(Identifier("web_account", "null"))


def test_from_mapping_can_replace_the_defaults() -> None:
    blocked = BlockedValues.from_mapping({"replace_defaults": True, "tokens": ["x"]})
    assert not blocked.is_blocked(Identifier("web_account", "null"))
    assert not blocked.is_blocked(phone("+15005550006"))
    assert blocked.is_blocked(Identifier("web_account", "x"))


@pytest.mark.parametrize(
    "config",
    [
        {"phone": ["+5511987654321"]},
        {"phones": "+5511987654321"},
        {"phones": ["not a phone"]},
        {"emails": [42]},
        {"repeated_digits": -1},
        {"repeated_digits": True},
        {"replace_defaults": "yes"},
    ],
)
def test_from_mapping_rejects_bad_config(config: dict[str, object]) -> None:
    with pytest.raises(IdentityConfigError):
        BlockedValues.from_mapping(config)

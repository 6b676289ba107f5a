from __future__ import annotations

from datetime import UTC, datetime

import pytest

from identity import (
    ChannelIdentityKey,
    Identifier,
    IdentityObservation,
    InvalidIdentifier,
    LinkLevel,
    PhoneCall,
    TelegramContactShare,
    TelegramSender,
    WebChatVisitor,
    WebClaims,
    WhatsAppSender,
    observe,
)

EXPIRES = datetime(2030, 1, 1, tzinfo=UTC)
PHONE = Identifier("phone", "+5511987654321")
EMAIL = Identifier("email", "ana@example.com")


def key(external_id: str) -> ChannelIdentityKey:
    return ChannelIdentityKey.parse(external_id)


def test_whatsapp_sender_verifies_its_phone() -> None:
    obs = observe(WhatsAppSender("whatsapp:+551187654321"))
    assert obs.key == key("whatsapp:+5511987654321")
    assert obs.level is LinkLevel.VERIFIED
    assert obs.verified == (PHONE,)
    assert (obs.asserted, obs.inferred) == ((), ())


def test_whatsapp_sender_that_is_not_a_number_is_refused() -> None:
    with pytest.raises(InvalidIdentifier):
        observe(WhatsAppSender("whatsapp:someone"))


def test_web_without_token_is_anonymous_and_proves_nothing() -> None:
    obs = observe(WebChatVisitor("v-123"))
    assert obs.key == key("web:anon:v-123")
    assert obs.level is LinkLevel.ANONYMOUS
    assert (obs.verified, obs.asserted, obs.inferred) == ((), (), ())


def test_web_token_verifies_account_and_only_flagged_contacts() -> None:
    claims = WebClaims(
        sub="acct-42", expires_at=EXPIRES, phone=PHONE.value, asserted_email=EMAIL.value
    )
    obs = observe(WebChatVisitor("v-123", claims))
    assert obs.key == key("web:acct:acct-42")
    assert obs.level is LinkLevel.VERIFIED
    assert obs.verified == (Identifier("web_account", "acct-42"), PHONE)
    assert obs.asserted == (EMAIL,)
    assert obs.previous_key == key("web:anon:v-123")


def test_web_token_without_verified_flags_proves_only_the_account() -> None:
    claims = WebClaims(
        sub="acct-42", expires_at=EXPIRES, asserted_phone=PHONE.value, asserted_email=EMAIL.value
    )
    obs = observe(WebChatVisitor("v-123", claims))
    assert obs.verified == (Identifier("web_account", "acct-42"),)
    assert set(obs.asserted) == {PHONE, EMAIL}


def test_web_token_with_placeholder_account_falls_back_to_anonymous() -> None:
    claims = WebClaims(sub="null", expires_at=EXPIRES, phone=PHONE.value)
    obs = observe(WebChatVisitor("v-123", claims))
    assert obs.key == key("web:anon:v-123")
    assert obs.level is LinkLevel.ANONYMOUS
    assert obs.verified == ()


@pytest.mark.parametrize(
    "visitor", ["", "null", "undefined", "00000000-0000-0000-0000-000000000000"]
)
def test_placeholder_visitor_ids_are_refused(visitor: str) -> None:
    # Every visitor sending the same placeholder would otherwise share one identity.
    with pytest.raises(InvalidIdentifier):
        observe(WebChatVisitor(visitor))


def test_telegram_sender_is_a_verified_account() -> None:
    obs = observe(TelegramSender(1111111))
    assert obs.key == key("telegram:1111111")
    assert obs.level is LinkLevel.VERIFIED
    assert obs.verified == (Identifier("telegram", "1111111"),)


def test_telegram_own_contact_verifies_the_phone() -> None:
    # Telegram sends the number without "+".
    obs = observe(TelegramContactShare(1111111, "5511987654321", contact_user_id=1111111))
    assert obs.key == key("telegram:1111111")
    assert obs.verified == (Identifier("telegram", "1111111"), PHONE)


@pytest.mark.parametrize("contact_user", [2222222, None])
def test_telegram_contact_of_someone_else_proves_nothing_about_the_sender(
    contact_user: int | None,
) -> None:
    obs = observe(TelegramContactShare(1111111, "+5511987654321", contact_user_id=contact_user))
    assert obs.verified == (Identifier("telegram", "1111111"),)
    assert PHONE not in obs.asserted + obs.inferred


def test_telegram_own_contact_with_unusable_number_keeps_the_account() -> None:
    obs = observe(TelegramContactShare(1111111, "12", contact_user_id=1111111))
    assert obs.verified == (Identifier("telegram", "1111111"),)
    assert "unusable" in obs.evidence


def test_telegram_service_account_is_blocked() -> None:
    obs = observe(TelegramSender(1087968824), stated=["ana@example.com"])
    assert obs.level is LinkLevel.ANONYMOUS
    assert (obs.verified, obs.asserted) == ((), ())


def test_phone_caller_id_is_only_inferred() -> None:
    obs = observe(PhoneCall("CA1", caller="+5511987654321"))
    assert obs.key == key("phone:+5511987654321")
    assert obs.level is LinkLevel.INFERRED
    assert obs.inferred == (PHONE,)
    assert obs.verified == ()
    assert obs.customer_hint is None


def test_call_center_customer_id_becomes_a_hint() -> None:
    obs = observe(PhoneCall("CA1", caller="+5511987654321", customer_id="cust-7"))
    assert obs.customer_hint == "cust-7"
    assert obs.level is LinkLevel.INFERRED  # the hint verifies the customer, not the caller id
    # Where the call goes if the caller id turns out to be another customer's.
    assert obs.named_key == key("phone:call:CA1")
    assert observe(PhoneCall("CA1", caller="+5511987654321")).named_key is None
    # Without a caller id the call's own key is the key already.
    assert observe(PhoneCall("CA1", customer_id="cust-7")).named_key is None


def test_named_key_survives_stated_claims_and_skips_placeholder_call_ids() -> None:
    call = PhoneCall("CA1", caller="+5511987654321", customer_id="cust-7")
    assert observe(call, stated=["ana@example.com"]).named_key == key("phone:call:CA1")
    placeholder = PhoneCall("test", caller="+5511987654321", customer_id="cust-7")
    assert observe(placeholder).named_key is None


@pytest.mark.parametrize("caller", [None, "anonymous", "+15005550006", "+266696687"])
def test_calls_without_usable_caller_id_are_keyed_by_call(caller: str | None) -> None:
    obs = observe(PhoneCall("CA1", caller=caller))
    assert obs.key == key("phone:call:CA1")
    assert obs.level is LinkLevel.ANONYMOUS
    assert obs.inferred == ()


def test_placeholder_customer_hint_is_ignored() -> None:
    assert observe(PhoneCall("CA1", caller=None, customer_id="null")).customer_hint is None


def test_stated_values_are_asserted_claims() -> None:
    obs = observe(
        WhatsAppSender("whatsapp:+5511987654321"),
        stated=["Ana@Example.com", "(21) 99876-5432", "not a number", "+55 11 99999-9999"],
    )
    assert obs.level is LinkLevel.VERIFIED
    assert obs.asserted == (EMAIL, Identifier("phone", "+5521998765432"))
    assert "stated" in obs.evidence


def test_stating_your_own_verified_number_adds_no_claim() -> None:
    obs = observe(WhatsAppSender("whatsapp:+5511987654321"), stated=["11 98765-4321"])
    assert obs.asserted == ()


def test_stated_claims_never_raise_an_anonymous_visitor() -> None:
    obs = observe(WebChatVisitor("v-1"), stated=["ana@example.com"])
    assert obs.level is LinkLevel.ANONYMOUS
    assert (obs.verified, obs.asserted) == ((), (EMAIL,))


def test_blocked_whatsapp_sender_proves_nothing() -> None:
    obs = observe(WhatsAppSender("whatsapp:+5511999999999"), stated=["ana@example.com"])
    assert obs.key == key("whatsapp:+5511999999999")
    assert obs.level is LinkLevel.ANONYMOUS
    assert (obs.verified, obs.asserted, obs.inferred) == ((), (), ())


def test_observation_refuses_verified_identifiers_below_verified_level() -> None:
    with pytest.raises(ValueError):
        IdentityObservation(key("web:anon:v"), LinkLevel.ASSERTED, "x", verified=(PHONE,))

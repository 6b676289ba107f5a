from __future__ import annotations

from datetime import UTC, datetime

import pytest

from identity import (
    ChannelIdentityKey,
    GraphSnapshot,
    Identifier,
    IdentifierLink,
    IdentityConfigError,
    IdentityObservation,
    LinkLevel,
    LinkLimits,
    PendingLink,
    PhoneCall,
    TelegramContactShare,
    TelegramSender,
    WebChatVisitor,
    WebClaims,
    WhatsAppSender,
    observe,
    resolve,
)

V, A = LinkLevel.VERIFIED, LinkLevel.ASSERTED
INF, N = LinkLevel.INFERRED, LinkLevel.ANONYMOUS
EXPIRES = datetime(2030, 1, 1, tzinfo=UTC)
PHONE = Identifier("phone", "+5511987654321")
OTHER_PHONE = Identifier("phone", "+5521998765432")
EMAIL = Identifier("email", "ana@example.com")
WA = ChannelIdentityKey.parse("whatsapp:+5511987654321")
ACCT = Identifier("web_account", "acct-42")


def web(
    sub: str = "acct-42",
    *,
    phone: str | None = None,
    asserted_phone: str | None = None,
    email: str | None = None,
    visitor: str = "v-1",
) -> IdentityObservation:
    claims = WebClaims(
        sub=sub, expires_at=EXPIRES, phone=phone, asserted_phone=asserted_phone, email=email
    )
    return observe(WebChatVisitor(visitor, claims))


# Customer "wa" owns the WhatsApp identity and its verified phone.
WHATSAPP_CUSTOMER = GraphSnapshot.from_rows(
    identities=[(WA, "wa", V)],
    holdings=[(PHONE, "wa", V)],
    counts=[("wa", "phone", 1)],
)


def test_first_whatsapp_message_creates_a_verified_customer() -> None:
    res = resolve(observe(WhatsAppSender("whatsapp:+5511987654321")), GraphSnapshot.from_rows())
    assert (res.customer_id, res.outcome) == (None, "new")
    assert (res.level, res.identity_level) == (V, V)
    assert res.attach == (IdentifierLink(PHONE, V),)
    assert res.pending == ()


def test_known_whatsapp_identity_keeps_its_customer() -> None:
    res = resolve(observe(WhatsAppSender("+5511987654321")), WHATSAPP_CUSTOMER)
    assert (res.customer_id, res.outcome, res.level) == ("wa", "known", V)
    assert res.attach == ()


def test_token_with_verified_phone_joins_the_whatsapp_customer() -> None:
    res = resolve(web(phone=PHONE.value), WHATSAPP_CUSTOMER)
    assert (res.customer_id, res.outcome, res.level, res.identity_level) == ("wa", "joined", V, V)
    assert res.attach == (IdentifierLink(ACCT, V),)
    assert res.pending == ()


def test_token_with_unverified_phone_only_proposes_a_link() -> None:
    res = resolve(web(asserted_phone=PHONE.value), WHATSAPP_CUSTOMER)
    assert (res.customer_id, res.outcome) == (None, "new")
    assert res.level is V  # verified for its own account, which is a new customer
    assert res.attach == (IdentifierLink(ACCT, V),)
    assert res.pending == (PendingLink(res.key, "wa", PHONE, A, "asserted_match"),)


def test_telegram_own_contact_joins_the_whatsapp_customer() -> None:
    obs = observe(TelegramContactShare(1111111, "5511987654321", contact_user_id=1111111))
    res = resolve(obs, WHATSAPP_CUSTOMER)
    assert (res.customer_id, res.outcome, res.level) == ("wa", "joined", V)
    assert res.attach == (IdentifierLink(Identifier("telegram", "1111111"), V),)


def test_telegram_contact_of_another_user_does_not_join() -> None:
    obs = observe(TelegramContactShare(1111111, "5511987654321", contact_user_id=2222222))
    res = resolve(obs, WHATSAPP_CUSTOMER)
    assert (res.customer_id, res.outcome) == (None, "new")
    assert res.pending == ()


def test_known_telegram_identity_with_verified_match_elsewhere_is_not_merged() -> None:
    tg = ChannelIdentityKey.parse("telegram:1111111")
    graph = GraphSnapshot.from_rows(
        identities=[(WA, "wa", V), (tg, "tg", V)],
        holdings=[(PHONE, "wa", V), (tg.identifier, "tg", V)],
    )
    obs = observe(TelegramContactShare(1111111, "5511987654321", contact_user_id=1111111))
    res = resolve(obs, graph)
    assert (res.customer_id, res.outcome) == ("tg", "known")
    assert res.attach == ()
    assert res.pending == (PendingLink(tg, "wa", PHONE, V, "verified_conflict"),)


def test_anonymous_visitor_stating_a_number_gets_a_pending_link_only() -> None:
    obs = observe(WebChatVisitor("v-9"), stated=["(11) 98765-4321", "ana@example.com"])
    res = resolve(obs, WHATSAPP_CUSTOMER)
    assert (res.customer_id, res.outcome, res.level, res.identity_level) == (None, "new", N, N)
    assert res.pending == (PendingLink(obs.key, "wa", PHONE, A, "asserted_match"),)
    # The unheld e-mail is recorded as a claim so a later verification can meet it.
    assert res.attach == (IdentifierLink(EMAIL, A),)


def test_claim_already_held_by_the_same_customer_changes_nothing() -> None:
    obs = observe(WhatsAppSender("+5511987654321"), stated=["ana@example.com"])
    graph = GraphSnapshot.from_rows(
        identities=[(WA, "wa", V)], holdings=[(PHONE, "wa", V), (EMAIL, "wa", A)]
    )
    res = resolve(obs, graph)
    assert (res.attach, res.pending) == ((), ())


def test_caller_id_matching_a_customer_is_only_an_inferred_proposal() -> None:
    obs = observe(PhoneCall("CA1", caller="+5511987654321"))
    res = resolve(obs, WHATSAPP_CUSTOMER)
    assert (res.customer_id, res.outcome, res.level) == (None, "new", INF)
    assert res.pending == (PendingLink(obs.key, "wa", PHONE, INF, "inferred_match"),)
    assert res.attach == ()


def test_call_center_hint_joins_and_verifies_only_that_customer() -> None:
    obs = observe(PhoneCall("CA1", caller="+5511987654321", customer_id="wa"))
    res = resolve(obs, WHATSAPP_CUSTOMER)
    assert (res.customer_id, res.outcome, res.level, res.identity_level) == ("wa", "joined", V, V)

    later = GraphSnapshot.from_rows(
        identities=[(WA, "wa", V), (obs.key, "wa", V)], holdings=[(PHONE, "wa", V)]
    )
    again = resolve(observe(PhoneCall("CA2", caller="+5511987654321")), later)
    # A spoofable caller id on a once-verified line sees only what a caller id may see.
    assert (again.customer_id, again.level, again.identity_level) == ("wa", INF, V)


CALLER = ChannelIdentityKey.parse("phone:+5511987654321")
CALL = ChannelIdentityKey.parse("phone:call:CA2")
# An earlier call from the number, without a customer id, gave the caller id customer "y".
CALLER_ON_ITS_OWN = GraphSnapshot.from_rows(
    identities=[(CALLER, "y", INF)], holdings=[(PHONE, "y", INF)], customers=["x"]
)
NAMED_BY_CALL_CENTER = PendingLink(CALLER, "x", PHONE, V, "named_by_call_center")


def named_call(*stated: str) -> IdentityObservation:
    return observe(PhoneCall("CA2", caller=PHONE.value, customer_id="x"), stated=stated)


def test_the_named_customer_gets_the_call_and_the_caller_id_is_proposed() -> None:
    res = resolve(named_call(), CALLER_ON_ITS_OWN)
    # The call, under its own key, on the customer the call center named, verified.
    assert (res.key, res.customer_id, res.outcome) == (CALL, "x", "joined")
    assert (res.level, res.identity_level) == (V, V)
    # The caller id stays where it is until an operator confirms or rejects the merge.
    assert res.pending == (NAMED_BY_CALL_CENTER,)
    assert (res.attach, res.absorb) == ((), ())


def test_a_repost_of_the_named_call_stays_on_the_named_customer() -> None:
    graph = GraphSnapshot.from_rows(
        identities=[(CALLER, "y", INF), (CALL, "x", V)], holdings=[(PHONE, "y", INF)]
    )
    res = resolve(named_call(), graph)
    assert (res.key, res.customer_id, res.outcome, res.level) == (CALL, "x", "known", V)
    assert res.pending == (NAMED_BY_CALL_CENTER,)


def test_claims_stated_on_the_named_call_go_to_the_named_customer() -> None:
    res = resolve(named_call("ana@example.com"), CALLER_ON_ITS_OWN)
    assert res.customer_id == "x"
    assert res.attach == (IdentifierLink(EMAIL, A),)


def test_merge_policy_absorbs_the_caller_ids_unverified_customer() -> None:
    res = resolve(named_call(), CALLER_ON_ITS_OWN, named_customer="merge")
    assert (res.key, res.customer_id, res.absorb) == (CALLER, "x", ("y",))
    # Once merged, the caller id is the named customer's, verified by the call center.
    assert (res.outcome, res.level, res.identity_level) == ("known", V, V)
    assert (res.pending, res.attach) == ((), ())


@pytest.mark.parametrize(
    "graph",
    [
        # The caller id was verified for "y" (an earlier call named "y").
        GraphSnapshot.from_rows(identities=[(CALLER, "y", V)], customers=["x"]),
        # "y" holds a verified identifier (a WhatsApp number of its own).
        GraphSnapshot.from_rows(
            identities=[(CALLER, "y", INF)], counts=[("y", "phone", 1)], customers=["x"]
        ),
    ],
)
def test_merge_policy_never_absorbs_a_customer_with_verified_evidence(
    graph: GraphSnapshot,
) -> None:
    res = resolve(named_call(), graph, named_customer="merge")
    assert (res.key, res.customer_id, res.absorb) == (CALL, "x", ())
    assert res.pending == (NAMED_BY_CALL_CENTER,)


def test_a_call_whose_own_key_is_a_third_customers_stays_a_conflict() -> None:
    graph = GraphSnapshot.from_rows(
        identities=[(CALLER, "y", INF), (CALL, "z", N)], customers=["x"]
    )
    res = resolve(named_call(), graph)
    assert (res.key, res.customer_id, res.level) == (CALLER, "y", INF)
    assert res.pending == (PendingLink(CALLER, "x", PHONE, V, "verified_conflict"),)


def test_a_call_without_caller_id_known_elsewhere_stays_a_conflict() -> None:
    graph = GraphSnapshot.from_rows(identities=[(CALL, "y", N)], customers=["x"])
    res = resolve(observe(PhoneCall("CA2", customer_id="x")), graph)
    assert (res.key, res.customer_id, res.level) == (CALL, "y", N)
    assert res.pending == (PendingLink(CALL, "x", CALL.identifier, V, "verified_conflict"),)


def test_unknown_hint_is_ignored() -> None:
    res = resolve(observe(PhoneCall("CA1", customer_id="ghost")), GraphSnapshot.from_rows())
    assert (res.customer_id, res.outcome, res.level) == (None, "new", N)


def test_merge_protection_keeps_a_second_web_account_out() -> None:
    graph = GraphSnapshot.from_rows(
        identities=[(WA, "wa", V)],
        holdings=[(PHONE, "wa", V), (Identifier("web_account", "acct-1"), "wa", V)],
        counts=[("wa", "phone", 1), ("wa", "web_account", 1)],
    )
    res = resolve(web("acct-2", phone=PHONE.value), graph)
    assert (res.customer_id, res.outcome, res.level) == (None, "new", V)
    assert res.pending == (PendingLink(res.key, "wa", PHONE, V, "merge_limit"),)
    assert res.attach == (IdentifierLink(Identifier("web_account", "acct-2"), V),)


def test_configured_limits_apply_to_joins() -> None:
    obs = observe(TelegramContactShare(7, "5511987654321", contact_user_id=7))
    graph = GraphSnapshot.from_rows(
        identities=[(WA, "wa", V)],
        holdings=[(PHONE, "wa", V)],
        counts=[("wa", "phone", 1), ("wa", "telegram", 1)],
    )
    assert resolve(obs, graph).outcome == "joined"
    res = resolve(obs, graph, limits=LinkLimits(telegram=1))
    assert res.outcome == "new"
    assert [p.reason for p in res.pending] == ["merge_limit"]


def test_known_identity_over_its_limit_refuses_the_extra_identifier() -> None:
    tg = ChannelIdentityKey.parse("telegram:7")
    graph = GraphSnapshot.from_rows(
        identities=[(tg, "tg", V)],
        holdings=[(tg.identifier, "tg", V)],
        counts=[("tg", "phone", 5), ("tg", "telegram", 1)],
    )
    res = resolve(observe(TelegramContactShare(7, "5511987654321", contact_user_id=7)), graph)
    assert (res.customer_id, res.attach, res.refused) == ("tg", (), (PHONE,))


def test_two_verified_matches_to_two_customers_are_never_merged() -> None:
    graph = GraphSnapshot.from_rows(
        holdings=[(PHONE, "wa", V), (EMAIL, "mail", V)],
        counts=[("wa", "phone", 1), ("mail", "email", 1)],
    )
    res = resolve(web(phone=PHONE.value, email=EMAIL.value), graph)
    assert (res.customer_id, res.outcome) == (None, "new")
    assert {(p.candidate_customer, p.via, p.reason) for p in res.pending} == {
        ("wa", PHONE, "verified_conflict"),
        ("mail", EMAIL, "verified_conflict"),
    }
    assert res.attach == (IdentifierLink(ACCT, V),)


def test_weaker_holder_of_a_verified_identifier_gets_a_proposal() -> None:
    # An anonymous visitor once typed this number; now its owner writes on WhatsApp.
    graph = GraphSnapshot.from_rows(holdings=[(PHONE, "anon", A)])
    res = resolve(observe(WhatsAppSender("+5511987654321")), graph)
    assert (res.customer_id, res.outcome) == (None, "new")
    assert res.attach == (IdentifierLink(PHONE, V),)
    assert res.pending == (PendingLink(WA, "anon", PHONE, A, "asserted_match"),)


def test_login_after_anonymous_chat_proposes_same_device_link() -> None:
    anon = ChannelIdentityKey.parse("web:anon:v-1")
    graph = GraphSnapshot.from_rows(identities=[(anon, "visitor", N)])
    res = resolve(web(visitor="v-1"), graph)
    assert res.outcome == "new"
    assert res.pending == (PendingLink(res.key, "visitor", anon.identifier, INF, "same_device"),)


def test_blocked_identifiers_never_link_nor_propose() -> None:
    fake = Identifier("phone", "+5511999999999")
    graph = GraphSnapshot.from_rows(
        identities=[(WA, "wa", V)], holdings=[(fake, "legacy", V), (fake, "other", A)]
    )
    obs = IdentityObservation(
        ChannelIdentityKey("webchat", ACCT),
        V,
        "hand-built",
        verified=(ACCT, fake),
        asserted=(fake,),
    )
    res = resolve(obs, graph)
    assert (res.customer_id, res.outcome) == (None, "new")
    assert res.pending == ()
    assert res.attach == (IdentifierLink(ACCT, V),)


def test_blocked_key_resolves_on_itself_at_anonymous_level() -> None:
    fake_key = ChannelIdentityKey.parse("whatsapp:+5511999999999")
    obs = IdentityObservation(fake_key, V, "hand-built", verified=(PHONE,), asserted=(EMAIL,))
    res = resolve(obs, WHATSAPP_CUSTOMER)
    assert (res.customer_id, res.outcome, res.level) == (None, "new", N)
    assert (res.attach, res.pending) == ((), ())
    known = GraphSnapshot.from_rows(identities=[(fake_key, "shared", V)])
    res = resolve(obs, known)
    assert (res.customer_id, res.level, res.identity_level) == ("shared", N, V)


def test_stored_level_rises_with_stronger_evidence_and_never_falls() -> None:
    acct_key = ChannelIdentityKey("webchat", ACCT)
    low = GraphSnapshot.from_rows(identities=[(acct_key, "c", A)], holdings=[(ACCT, "c", A)])
    res = resolve(web(), low)
    assert (res.level, res.identity_level) == (V, V)
    assert res.attach == (IdentifierLink(ACCT, V),)  # the claim is now verified


def test_link_limits_config() -> None:
    assert LinkLimits.from_mapping({"phone": 2}) == LinkLimits(phone=2)
    for bad in ({"fax": 1}, {"phone": 0}, {"phone": "5"}, {"email": True}):
        with pytest.raises(IdentityConfigError):
            LinkLimits.from_mapping(bad)


def test_telegram_sender_alone_never_joins_anyone() -> None:
    res = resolve(observe(TelegramSender(1111111)), WHATSAPP_CUSTOMER)
    assert (res.outcome, res.pending) == ("new", ())

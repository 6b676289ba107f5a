from __future__ import annotations

from identity.levels import LinkLevel
from identity.policy import ScopePolicy
from identity.tool_reach import (
    ActionReach,
    KnownIdentifier,
    asserted_identifiers,
    offer,
    refusal,
)

ORDER_STATUS = ActionReach("order_status", LinkLevel.VERIFIED, frozenset({"profile", "account"}))
OPENING_HOURS = ActionReach("opening_hours", LinkLevel.ANONYMOUS)
TRACK_PARCEL = ActionReach("track_parcel", LinkLevel.ASSERTED, frozenset({"profile"}))
ACTIONS = (ORDER_STATUS, OPENING_HOURS, TRACK_PARCEL)
BY_NAME = {action.name: action for action in ACTIONS}


def test_an_anonymous_identity_is_offered_only_the_actions_for_anyone() -> None:
    offered = offer(ACTIONS, LinkLevel.ANONYMOUS)

    assert offered.offered == ("opening_hours",)
    assert offered.out_of_reach == ("order_status", "track_parcel")
    assert offered.needs_verification


def test_a_verified_identity_is_offered_everything_in_order() -> None:
    offered = offer(ACTIONS, LinkLevel.VERIFIED)

    assert offered.offered == ("order_status", "opening_hours", "track_parcel")
    assert not offered.needs_verification


def test_a_call_below_the_actions_level_or_to_an_unknown_action_is_refused() -> None:
    assert refusal("order_status", BY_NAME, LinkLevel.ASSERTED) == (
        "'order_status' needs a verified identity; this one is asserted"
    )
    assert refusal("transfer_all", BY_NAME, LinkLevel.VERIFIED) == (
        "no action named 'transfer_all' is offered"
    )
    assert refusal("order_status", BY_NAME, LinkLevel.VERIFIED) is None
    assert refusal("track_parcel", BY_NAME, LinkLevel.ASSERTED) is None


IDENTIFIERS = (
    KnownIdentifier("phone", "+5511999990000", LinkLevel.VERIFIED),
    KnownIdentifier("email", "ana@example.org", LinkLevel.INFERRED),
    KnownIdentifier("web_account", "acct-17", LinkLevel.VERIFIED),
)


def test_a_verified_customer_gives_a_verified_action_only_its_surely_known_identifiers() -> None:
    sent = asserted_identifiers(
        IDENTIFIERS, ORDER_STATUS, ScopePolicy.default().allowed_scopes(LinkLevel.VERIFIED)
    )

    # The e-mail was only inferred: a verified-only action does not learn it.
    assert sent == {"phone": "+5511999990000", "web_account": "acct-17"}


def test_the_scopes_of_the_level_and_of_the_action_both_bound_the_identifiers() -> None:
    policy = ScopePolicy.default()
    # Asserted sees public and profile, not account: the account id stays home.
    asserted = asserted_identifiers(
        IDENTIFIERS, TRACK_PARCEL, policy.allowed_scopes(LinkLevel.ASSERTED, "webchat")
    )
    assert asserted == {"phone": "+5511999990000"}
    # An action that names no scopes learns no identifier, whatever the level.
    assert (
        asserted_identifiers(IDENTIFIERS, OPENING_HOURS, policy.allowed_scopes(LinkLevel.VERIFIED))
        == {}
    )


def test_of_two_identifiers_of_one_kind_the_surest_goes() -> None:
    phones = (
        KnownIdentifier("phone", "+5511000000001", LinkLevel.ASSERTED),
        KnownIdentifier("phone", "+5511000000002", LinkLevel.VERIFIED),
    )
    action = ActionReach("track_parcel", LinkLevel.ASSERTED, frozenset({"profile"}))

    sent = asserted_identifiers(
        phones, action, ScopePolicy.default().allowed_scopes(LinkLevel.VERIFIED)
    )

    assert sent == {"phone": "+5511000000002"}


def test_a_channel_override_that_hides_a_scope_hides_its_identifiers() -> None:
    policy = ScopePolicy.from_mapping(
        {"channels": {"phone": {"verified": ["public"], "asserted": ["public"]}}}
    )

    sent = asserted_identifiers(
        IDENTIFIERS, ORDER_STATUS, policy.allowed_scopes(LinkLevel.VERIFIED, "phone")
    )

    assert sent == {}

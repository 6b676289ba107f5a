from __future__ import annotations

from dataclasses import dataclass

import pytest

from identity import (
    ChannelIdentityKey,
    IdentityConfigError,
    LinkLevel,
    ScopePolicy,
)

ALL = frozenset({"public", "profile", "account", "payment"})


@dataclass(frozen=True, slots=True)
class Fact:
    key: str
    scope: str
    source_identity_key: str


def test_default_table() -> None:
    policy = ScopePolicy.default()
    assert policy.allowed_scopes(LinkLevel.VERIFIED) == ALL
    assert policy.allowed_scopes(LinkLevel.ASSERTED) == {"public", "profile"}
    assert policy.allowed_scopes(LinkLevel.INFERRED) == {"public"}
    assert policy.allowed_scopes(LinkLevel.ANONYMOUS) == {"public"}
    assert policy.allowed_scopes(LinkLevel.VERIFIED, "whatsapp") == ALL


def test_all_means_every_configured_scope() -> None:
    policy = ScopePolicy.from_mapping(
        {"scopes": ["public", "profile", "account", "payment", "health"]}
    )
    assert policy.allowed_scopes(LinkLevel.VERIFIED) == ALL | {"health"}
    assert policy.allowed_scopes(LinkLevel.ASSERTED) == {"public", "profile"}


def test_from_mapping_overrides_levels_and_channels() -> None:
    policy = ScopePolicy.from_mapping(
        {
            "levels": {"asserted": ["public", "profile", "account"], "inferred": "public"},
            "channels": {"phone": {"verified": ["public", "profile", "account"]}},
        }
    )
    assert policy.allowed_scopes(LinkLevel.ASSERTED) == {"public", "profile", "account"}
    assert policy.allowed_scopes(LinkLevel.VERIFIED, "phone") == {"public", "profile", "account"}
    assert policy.allowed_scopes(LinkLevel.VERIFIED, "webchat") == ALL
    assert policy.allowed_scopes(LinkLevel.ASSERTED, "phone") == {"public", "profile", "account"}


def test_to_mapping_round_trips() -> None:
    policy = ScopePolicy.from_mapping(
        {
            "scopes": ["public", "profile", "account"],
            "channels": {"phone": {"verified": ["public", "profile"]}},
            "own_facts_only": ["anonymous", "inferred"],
        }
    )
    assert ScopePolicy.from_mapping(policy.to_mapping()) == policy


def test_removing_a_default_scope_keeps_the_rest_of_the_defaults() -> None:
    policy = ScopePolicy.from_mapping({"scopes": ["public", "account"]})
    assert policy.allowed_scopes(LinkLevel.ASSERTED) == {"public"}
    assert policy.allowed_scopes(LinkLevel.VERIFIED) == {"public", "account"}


@pytest.mark.parametrize(
    "config",
    [
        {"levels": {"trusted": "all"}},
        {"levels": {"verified": ["public", "secrets"]}},
        {"channels": {"fax": {"verified": "all"}}},
        {"channels": {"phone": {"sometimes": ["public"]}}},
        {"colour": "blue"},
        {"scopes": "public"},
        {"scopes": ["public", ""]},
        {"scopes": ["public", "all"]},
        {"own_facts_only": ["everyone"]},
        # Not monotone: the weaker level would see more than the stronger one.
        {"levels": {"anonymous": ["public", "payment"]}},
        {"channels": {"phone": {"verified": ["public"], "asserted": ["public", "profile"]}}},
    ],
)
def test_invalid_policies_are_refused(config: dict[str, object]) -> None:
    with pytest.raises(IdentityConfigError):
        ScopePolicy.from_mapping(config)


ME = ChannelIdentityKey.parse("web:anon:v-1")
FACTS = (
    Fact("favourite_colour", "public", "web:anon:v-1"),
    Fact("store_hours_asked", "public", "whatsapp:+5511987654321"),
    Fact("email", "profile", "web:anon:v-1"),
    Fact("order_id", "account", "whatsapp:+5511987654321"),
    Fact("pix_key", "payment", "whatsapp:+5511987654321"),
)


def test_anonymous_sees_only_public_facts_from_the_same_identity() -> None:
    visible = ScopePolicy.default().visible_facts(FACTS, LinkLevel.ANONYMOUS, "webchat", ME)
    assert [f.key for f in visible] == ["favourite_colour"]


def test_anonymous_accepts_the_key_as_a_string() -> None:
    visible = ScopePolicy.default().visible_facts(FACTS, LinkLevel.ANONYMOUS, None, str(ME))
    assert [f.key for f in visible] == ["favourite_colour"]


@pytest.mark.parametrize(
    ("level", "keys"),
    [
        (LinkLevel.INFERRED, ["favourite_colour", "store_hours_asked"]),
        (LinkLevel.ASSERTED, ["favourite_colour", "store_hours_asked", "email"]),
        (LinkLevel.VERIFIED, [f.key for f in FACTS]),
    ],
)
def test_linked_levels_see_facts_from_every_identity_in_scope(
    level: LinkLevel, keys: list[str]
) -> None:
    visible = ScopePolicy.default().visible_facts(FACTS, level, "whatsapp", ME)
    assert [f.key for f in visible] == keys


def test_channel_override_filters_facts() -> None:
    policy = ScopePolicy.from_mapping({"channels": {"phone": {"verified": ["public", "profile"]}}})
    visible = policy.visible_facts(FACTS, LinkLevel.VERIFIED, "phone", ME)
    assert [f.key for f in visible] == ["favourite_colour", "store_hours_asked", "email"]


def test_facts_with_unknown_scopes_are_never_visible() -> None:
    odd = Fact("x", "internal", "web:anon:v-1")
    assert ScopePolicy.default().visible_facts([odd], LinkLevel.VERIFIED, None, ME) == ()

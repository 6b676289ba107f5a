from __future__ import annotations

from datetime import UTC, datetime

from identity import (
    ChannelIdentityKey,
    GraphSnapshot,
    Identifier,
    IdentityLink,
    LinkLevel,
    PhoneCall,
    WebChatVisitor,
    WebClaims,
    lookups_for,
    observe,
)

PHONE = Identifier("phone", "+5511987654321")
OTHER_PHONE = Identifier("phone", "+5521998765432")
ACCT = Identifier("web_account", "acct-42")


def test_lookups_name_everything_resolve_reads() -> None:
    claims = WebClaims(
        "acct-42",
        datetime(2030, 1, 1, tzinfo=UTC),
        phone=PHONE.value,
        asserted_phone=OTHER_PHONE.value,
    )
    obs = observe(WebChatVisitor("v-1", claims))
    looks = lookups_for(obs)
    assert looks.keys == (obs.key, ChannelIdentityKey.parse("web:anon:v-1"))
    assert looks.identifiers == (ACCT, PHONE, OTHER_PHONE)
    assert looks.customer_ids == ()
    call = observe(PhoneCall("CA1", caller="+5511987654321", customer_id="c-1"))
    assert lookups_for(call).customer_ids == ("c-1",)
    assert lookups_for(call).identifiers == (PHONE,)
    # The call's own key too: it carries the call when the caller id is someone else's.
    assert lookups_for(call).keys == (call.key, ChannelIdentityKey.parse("phone:call:CA1"))


def test_snapshot_reduces_rows_to_the_strongest_level_per_customer() -> None:
    graph = GraphSnapshot.from_rows(
        holdings=[
            (PHONE, "a", LinkLevel.ASSERTED),
            (PHONE, "a", LinkLevel.VERIFIED),
            (PHONE, "b", LinkLevel.INFERRED),
        ],
        customers=["z"],
    )
    assert sorted((h.customer_id, h.level.value) for h in graph.holders(PHONE)) == [
        ("a", "verified"),
        ("b", "inferred"),
    ]
    assert tuple(graph.holders(OTHER_PHONE)) == ()


def test_snapshot_answers_identities_counts_and_customers() -> None:
    key = ChannelIdentityKey.parse("whatsapp:+5511987654321")
    graph = GraphSnapshot.from_rows(
        identities=[(key, "a", LinkLevel.VERIFIED)],
        counts=[("a", "phone", 2)],
        customers=["z"],
    )
    assert graph.identity(key) == IdentityLink("a", LinkLevel.VERIFIED)
    assert graph.identity(ChannelIdentityKey.parse("telegram:1")) is None
    assert graph.identifier_count("a", "phone") == 2
    assert graph.identifier_count("a", "email") == 0  # absent rows read as zero
    assert graph.has_customer("a") and graph.has_customer("z")
    assert not graph.has_customer("q")

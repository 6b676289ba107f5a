from __future__ import annotations

from datetime import UTC, datetime

import pytest

from identity import (
    ChannelIdentityKey,
    Evidence,
    Identifier,
    IdentityLink,
    LinkLevel,
    MemoryGraph,
    OwnershipConflict,
    PhoneCall,
    Resolution,
    TelegramContactShare,
    WebChatVisitor,
    WebClaims,
    WhatsAppSender,
    observe,
    resolve,
)

PHONE = Identifier("phone", "+5511987654321")
EXPIRES = datetime(2030, 1, 1, tzinfo=UTC)


def owner(graph: MemoryGraph, key: ChannelIdentityKey) -> str:
    link = graph.identity(key)
    assert link is not None
    return link.customer_id


def send(graph: MemoryGraph, evidence: Evidence, stated: tuple[str, ...] = ()) -> Resolution:
    resolution = resolve(observe(evidence, stated=stated), graph)
    graph.apply(resolution)
    graph.add_record("message", resolution.key)
    return resolution


def test_apply_creates_customer_identity_and_identifiers() -> None:
    graph = MemoryGraph()
    res = send(graph, WhatsAppSender("whatsapp:+5511987654321"), ("ana@example.com",))
    link = graph.identity(res.key)
    assert link is not None and link.level is LinkLevel.VERIFIED
    assert graph.customers == {link.customer_id}
    assert graph.identifiers(link.customer_id) == {
        PHONE: LinkLevel.VERIFIED,
        Identifier("email", "ana@example.com"): LinkLevel.ASSERTED,
    }
    assert graph.identifier_count(link.customer_id, "phone") == 1
    assert graph.identifier_count(link.customer_id, "email") == 0  # only verified ones count


def test_verified_token_and_telegram_contact_join_one_customer() -> None:
    graph = MemoryGraph()
    wa = send(graph, WhatsAppSender("+5511987654321"))
    web = send(graph, WebChatVisitor("v-1", WebClaims("acct-1", EXPIRES, phone=PHONE.value)))
    tg = send(graph, TelegramContactShare(1111111, "5511987654321", contact_user_id=1111111))
    customers = {owner(graph, r.key) for r in (wa, web, tg)}
    assert len(customers) == 1
    (customer,) = customers
    assert set(graph.identity_keys(customer)) == {wa.key, web.key, tg.key}


def test_confirming_a_pending_link_merges_and_verifies() -> None:
    graph = MemoryGraph()
    wa = send(graph, WhatsAppSender("+5511987654321"))
    anon = send(graph, WebChatVisitor("v-1"), ("11 98765-4321",))
    (link,) = graph.pending
    assert link.identity_key == anon.key and link.reason == "asserted_match"
    wa_customer = owner(graph, wa.key)
    audit = graph.confirm(link, actor="op", reason="called the customer back")
    assert audit is not None and audit.action == "merge" and audit.to_customer == wa_customer
    assert graph.identity(anon.key) == IdentityLink(wa_customer, LinkLevel.VERIFIED)
    assert graph.pending == ()
    # The stored link is verified; an anonymous visitor still sees only what its evidence allows.
    again = resolve(observe(WebChatVisitor("v-1")), graph)
    assert (again.customer_id, again.level, again.identity_level) == (
        wa_customer,
        LinkLevel.ANONYMOUS,
        LinkLevel.VERIFIED,
    )


def test_pending_links_follow_merges_and_vanish_when_satisfied() -> None:
    graph = MemoryGraph()
    wa = send(graph, WhatsAppSender("+5511987654321"))
    call = send(graph, PhoneCall("CA1", caller="+5511987654321"))
    (link,) = graph.pending
    assert link.reason == "inferred_match"
    third = send(graph, WhatsAppSender("+5521998765432"))
    wa_customer = owner(graph, wa.key)
    third_customer = owner(graph, third.key)
    graph.merge(wa_customer, third_customer, actor="op", reason="same family account")
    (moved,) = graph.pending
    assert moved.candidate_customer == third_customer
    call_customer = owner(graph, call.key)
    graph.merge(call_customer, third_customer, actor="op", reason="same person")
    assert graph.pending == ()


def test_split_undoes_merge_and_is_audited() -> None:
    graph = MemoryGraph()
    a = send(graph, WhatsAppSender("+5511987654321"))
    b = send(graph, WhatsAppSender("+5521998765432"))
    before = graph.ownership()
    a_customer = owner(graph, a.key)
    b_customer = owner(graph, b.key)
    merge = graph.merge(a_customer, b_customer, actor="op", reason="r")
    graph.split(
        b_customer, merge.identity_keys, actor="op", reason="undo", new_customer_id=a_customer
    )
    assert graph.ownership() == before
    assert [entry.action for entry in graph.audit_log] == ["merge", "split"]


def test_a_call_named_for_another_customer_is_proposed_then_confirmed() -> None:
    graph = MemoryGraph()
    first = send(graph, PhoneCall("CA1", caller="+5511987654321"))
    named = send(graph, WhatsAppSender("+5521998765432"))
    ana = owner(graph, named.key)
    call = send(graph, PhoneCall("CA2", caller="+5511987654321", customer_id=ana))
    assert owner(graph, call.key) == ana and call.key != first.key
    (link,) = graph.pending
    assert (link.identity_key, link.candidate_customer) == (first.key, ana)
    caller_customer = owner(graph, first.key)
    audit = graph.confirm(link, actor="op", reason="Ana confirmed the earlier call was hers")
    assert audit is not None and audit.from_customer == caller_customer
    assert set(graph.identity_keys(ana)) == {first.key, named.key, call.key}


def test_a_merging_tenant_absorbs_the_caller_ids_customer_at_once() -> None:
    graph = MemoryGraph()
    first = send(graph, PhoneCall("CA1", caller="+5511987654321"))
    caller_customer = owner(graph, first.key)
    ana = owner(graph, send(graph, WhatsAppSender("+5521998765432")).key)
    call = PhoneCall("CA2", caller="+5511987654321", customer_id=ana)
    resolution = resolve(observe(call), graph, named_customer="merge")
    graph.apply(resolution, actor="call-center")
    assert resolution.key == first.key and owner(graph, first.key) == ana
    assert caller_customer not in graph.customers and graph.pending == ()
    (audit,) = graph.audit_log
    assert (audit.actor, audit.from_customer, audit.to_customer) == (
        "call-center",
        caller_customer,
        ana,
    )


def test_reject_forgets_the_proposal() -> None:
    graph = MemoryGraph()
    send(graph, WhatsAppSender("+5511987654321"))
    send(graph, WebChatVisitor("v-1"), ("11 98765-4321",))
    (link,) = graph.pending
    graph.reject(link)
    assert graph.pending == ()
    with pytest.raises(OwnershipConflict):
        graph.confirm(link, actor="op", reason="late")


def test_stale_resolutions_and_unknown_sources_are_refused() -> None:
    graph = MemoryGraph()
    key = ChannelIdentityKey.parse("whatsapp:+5511987654321")
    first = resolve(observe(WhatsAppSender(str(key))), graph)
    stale = resolve(observe(WhatsAppSender(str(key))), graph)
    graph.apply(first)
    other = graph.new_customer()
    with pytest.raises(OwnershipConflict):
        graph.apply(Resolution(key, other, "known", LinkLevel.VERIFIED, LinkLevel.VERIFIED, "x"))
    with pytest.raises(OwnershipConflict):
        graph.apply(Resolution(key, "ghost", "known", LinkLevel.VERIFIED, LinkLevel.VERIFIED, "x"))
    assert stale.customer_id is None  # resolved before the first was stored
    with pytest.raises(OwnershipConflict):
        graph.add_record("message", ChannelIdentityKey.parse("telegram:5"))

"""The identity step on real storage (SQLite and PostgreSQL): linking, pending links,
operator confirm/reject, merge and split; a lot of observations resolved as one at a time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.customers import operator_actions as operator_store
from gateway.customers.resolve import (
    IdentityRules,
    ResolvedIdentity,
    apply_resolution,
    resolve_identities,
    resolve_identity,
    snapshot_for,
)
from gateway.storage.errors import IdentityRace
from gateway.storage.records import NewFact, NewMessage
from gateway.storage.repositories import audit, customers, episodes, facts, messages
from identity import (
    LinkLevel,
    PhoneCall,
    TelegramContactShare,
    TelegramSender,
    WebChatVisitor,
    WebClaims,
    WhatsAppSender,
    observe,
    resolve,
)

NUMBER = "+5511998765432"
LATER = datetime.now(UTC) + timedelta(hours=1)


async def _whatsapp(session: AsyncSession) -> str:
    resolved = await resolve_identity(session, observe(WhatsAppSender(f"whatsapp:{NUMBER}")))
    assert resolved.level is LinkLevel.VERIFIED
    assert resolved.outcome == "new"
    assert "payment" in resolved.allowed_scopes
    return resolved.customer_id


async def test_a_verified_match_joins_the_same_customer(session: AsyncSession) -> None:
    customer_id = await _whatsapp(session)
    claims = WebClaims(sub="acct-1", expires_at=LATER, phone=NUMBER)
    web = await resolve_identity(session, observe(WebChatVisitor("visitor-abc", claims)))
    assert (web.customer_id, web.outcome, web.level) == (customer_id, "joined", LinkLevel.VERIFIED)
    contact = await resolve_identity(
        session,
        observe(TelegramContactShare(sender_id=777, phone_number=NUMBER, contact_user_id=777)),
    )
    assert contact.customer_id == customer_id
    identities = await customers.list_identities(session, customer_id)
    assert sorted(i.external_id for i in identities) == sorted(
        [f"whatsapp:{NUMBER}", "web:acct:acct-1", "telegram:777"]
    )
    assert {i.link_level for i in identities} == {"verified"}


async def test_a_stated_number_never_merges_and_leaves_a_pending_link(
    session: AsyncSession,
) -> None:
    customer_id = await _whatsapp(session)
    anonymous = await resolve_identity(
        session, observe(WebChatVisitor("visitor-xyz"), stated=[f"meu número é {NUMBER}"])
    )
    assert anonymous.customer_id != customer_id
    assert anonymous.level is LinkLevel.ANONYMOUS
    assert anonymous.allowed_scopes == frozenset({"public"})
    pending = await operator_store.list_pending_links(session, customer_id=customer_id)
    assert [(p.target_customer_id, p.identifier_value) for p in pending] == [(customer_id, NUMBER)]
    caller = await resolve_identity(session, observe(PhoneCall("call-1", caller=NUMBER)))
    assert caller.customer_id != customer_id
    assert caller.level is LinkLevel.INFERRED
    assert caller.allowed_scopes == frozenset({"public"})
    assert len(await operator_store.list_pending_links(session, customer_id=customer_id)) == 2


async def test_unverified_telegram_contact_of_someone_else_proves_nothing(
    session: AsyncSession,
) -> None:
    customer_id = await _whatsapp(session)
    other = await resolve_identity(
        session, observe(TelegramContactShare(sender_id=5, phone_number=NUMBER, contact_user_id=6))
    )
    assert other.customer_id != customer_id
    assert await operator_store.list_pending_links(session, customer_id=customer_id) == []


async def test_confirming_a_pending_link_merges_and_verifies(session: AsyncSession) -> None:
    customer_id = await _whatsapp(session)
    caller = await resolve_identity(session, observe(PhoneCall("call-9", caller=NUMBER)))
    [link] = await operator_store.list_pending_links(session, customer_id=customer_id)
    entry = await operator_store.confirm_pending_link(
        session, link.id, actor="ana.operator", reason="customer confirmed on the call"
    )
    assert entry.action == "confirm_link"
    identities = await customers.list_identities(session, customer_id)
    phone = next(i for i in identities if i.channel == "phone")
    assert phone.link_level == "verified"
    assert await customers.list_identities(session, caller.customer_id) == []
    actions = [e.action for e in await audit.list_audit(session, subject_id=customer_id)]
    assert actions == ["confirm_link", "merge"]
    assert await operator_store.list_pending_links(session, customer_id=customer_id) == []


async def test_rejecting_a_pending_link_changes_nothing_but_the_link(
    session: AsyncSession,
) -> None:
    customer_id = await _whatsapp(session)
    caller = await resolve_identity(session, observe(PhoneCall("call-2", caller=NUMBER)))
    [link] = await operator_store.list_pending_links(session, customer_id=customer_id)
    entry = await operator_store.reject_pending_link(
        session, link.id, actor="op", reason="different person"
    )
    assert entry.action == "reject_link"
    assert len(await customers.list_identities(session, caller.customer_id)) == 1
    assert await operator_store.list_pending_links(session) == []


async def _talk(session: AsyncSession, customer_id: str, identity_id: str, channel: str) -> None:
    episode = await episodes.open_episode(
        session, customer_id=customer_id, channel=channel, identity_id=identity_id
    )
    stored = await messages.append_message(
        session,
        NewMessage(customer_id, episode.id, channel, "user", f"hi from {channel}", 4, identity_id),
    )
    await facts.record_fact(
        session, customer_id, NewFact(f"{channel}_note", "x", "profile", stored.id)
    )


async def test_merge_then_split_restores_ownership_exactly(session: AsyncSession) -> None:
    whatsapp = await resolve_identity(session, observe(WhatsAppSender(f"whatsapp:{NUMBER}")))
    telegram = await resolve_identity(session, observe(TelegramSender(4242)))
    await _talk(session, whatsapp.customer_id, whatsapp.identity_id, "whatsapp")
    await _talk(session, telegram.customer_id, telegram.identity_id, "telegram")
    before_a = sorted(await operator_store.owned_records(session, whatsapp.customer_id))
    before_b = sorted(await operator_store.owned_records(session, telegram.customer_id))
    assert before_a and before_b

    await operator_store.merge_customers(
        session, telegram.customer_id, whatsapp.customer_id, actor="op", reason="same person"
    )
    merged = await operator_store.owned_records(session, whatsapp.customer_id)
    assert len(merged) == len(before_a) + len(before_b)
    assert await operator_store.owned_records(session, telegram.customer_id) == []

    new_id, entry = await operator_store.split_customer(
        session, whatsapp.customer_id, ["telegram:4242"], actor="op", reason="wrong merge"
    )
    assert entry.action == "split"
    assert sorted(await operator_store.owned_records(session, whatsapp.customer_id)) == before_a
    split_off = sorted(await operator_store.owned_records(session, new_id))
    assert [(r.kind, r.record_id, r.source) for r in split_off] == [
        (r.kind, r.record_id, r.source) for r in before_b
    ]
    telegram_facts = await facts.current_facts(session, new_id)
    assert [f.key for f in telegram_facts] == ["telegram_note"]


async def test_an_identity_that_appears_after_the_snapshot_is_not_given_a_second_customer(
    session: AsyncSession,
) -> None:
    # Two first messages of one visitor at once: both resolve it as a stranger; the other one
    # stores the identity first. Writing on would split the visitor into two customers.
    observation = observe(WebChatVisitor("visitor-race", None))
    stale = resolve(observation, await snapshot_for(session, observation))
    assert stale.customer_id is None  # resolved as new
    winner = await resolve_identity(session, observation)
    with pytest.raises(IdentityRace):
        await apply_resolution(session, stale)
    again = await resolve_identity(session, observation)  # what the retry does
    assert again.customer_id == winner.customer_id


async def _caller_then_named_call(
    session: AsyncSession, rules: IdentityRules | None = None
) -> tuple[str, str, ResolvedIdentity]:
    """A call from NUMBER without a customer id (its own customer), a WhatsApp customer of
    another number, then a call from NUMBER the call center names for that customer."""
    caller = await resolve_identity(session, observe(PhoneCall("call-1", caller=NUMBER)))
    named = await resolve_identity(session, observe(WhatsAppSender("whatsapp:+5521998765432")))
    call = await resolve_identity(
        session,
        observe(PhoneCall("call-2", caller=NUMBER, customer_id=named.customer_id)),
        rules=rules,
    )
    return caller.customer_id, named.customer_id, call


async def test_a_named_call_goes_to_the_named_customer_and_proposes_the_caller_id(
    session: AsyncSession,
) -> None:
    caller_customer, named_customer, call = await _caller_then_named_call(session)
    assert (call.customer_id, call.level) == (named_customer, LinkLevel.VERIFIED)
    call_identity = await customers.identity_by_id(session, call.identity_id)
    assert call_identity.external_id == "phone:call:call-2"
    caller_identity = await customers.find_identity(session, "phone", f"phone:{NUMBER}")
    assert caller_identity is not None and caller_identity.customer_id == caller_customer
    [link] = await operator_store.list_pending_links(session, customer_id=named_customer)
    assert (link.identity_id, link.reason) == (caller_identity.id, "named_by_call_center")

    await operator_store.confirm_pending_link(
        session, link.id, actor="ana.operator", reason="the earlier call was hers too"
    )
    identities = await customers.list_identities(session, named_customer)
    assert {i.external_id: i.link_level for i in identities} == {
        "whatsapp:+5521998765432": "verified",
        "phone:call:call-2": "verified",
        f"phone:{NUMBER}": "verified",
    }
    assert await customers.unmerged_customers(session, [caller_customer]) == set()


async def test_a_merging_tenant_merges_the_caller_ids_customer_at_once(
    session: AsyncSession,
) -> None:
    caller_customer, named_customer, call = await _caller_then_named_call(
        session, IdentityRules(named_customer="merge")
    )
    assert (call.customer_id, call.level) == (named_customer, LinkLevel.VERIFIED)
    caller_identity = await customers.find_identity(session, "phone", f"phone:{NUMBER}")
    assert caller_identity is not None and call.identity_id == caller_identity.id
    assert (caller_identity.customer_id, caller_identity.link_level) == (named_customer, "verified")
    assert await customers.unmerged_customers(session, [caller_customer]) == set()
    assert await operator_store.list_pending_links(session) == []
    [merge] = await audit.list_audit(session, subject_id=named_customer, action="merge")
    assert (merge.actor, merge.details["from_customer"]) == ("call-center", caller_customer)


def _shape(resolved: list[ResolvedIdentity]) -> list[tuple[object, ...]]:
    """What each resolution decided, the customers and identities named by order of first
    appearance (their ids are random)."""
    customers_seen: dict[str, int] = {}
    identities_seen: dict[str, int] = {}
    return [
        (
            r.outcome,
            r.level,
            sorted(r.allowed_scopes),
            r.pending_links,
            customers_seen.setdefault(r.customer_id, len(customers_seen)),
            identities_seen.setdefault(r.identity_id, len(identities_seen)),
        )
        for r in resolved
    ]


async def test_a_lot_resolves_as_its_observations_one_at_a_time(session: AsyncSession) -> None:
    whatsapp = observe(WhatsAppSender(f"whatsapp:{NUMBER}"))
    telegram = observe(TelegramSender(4242))
    claims = WebClaims(sub="acct-1", expires_at=LATER, phone=NUMBER)
    lot = [
        whatsapp,
        whatsapp,  # the identity the first one created, found without a new customer
        telegram,
        observe(WebChatVisitor("visitor-abc", claims)),
        observe(PhoneCall("call-1", caller=NUMBER)),  # a pending link to the first customer
        whatsapp,
        telegram,
        observe(WebChatVisitor("visitor-xyz"), stated=[f"meu número é {NUMBER}"]),
    ]
    async with session.begin_nested() as alone:
        one_by_one = [await resolve_identity(session, observation) for observation in lot]
        await alone.rollback()
    together = await resolve_identities(session, [(o, IdentityRules()) for o in lot])
    assert _shape(together) == _shape(one_by_one)
    assert [r.outcome for r in together[:4]] == ["new", "known", "new", "joined"]
    assert together[3].customer_id == together[0].customer_id
    pending = await operator_store.list_pending_links(session, customer_id=together[0].customer_id)
    assert len(pending) == 2  # the caller's and the stated number's, as one at a time


async def test_a_lot_of_known_senders_reads_the_graph_once(session: AsyncSession) -> None:
    senders = [observe(WhatsAppSender(f"whatsapp:+55119900000{n:02d}")) for n in range(6)]
    for observation in senders:
        await resolve_identity(session, observation)
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    engine = (await session.connection()).sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        resolved = await resolve_identities(session, [(o, IdentityRules()) for o in senders * 5])
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert {r.outcome for r in resolved} == {"known"}
    assert len({r.customer_id for r in resolved}) == 6
    # Identities, holders and verified counts for all thirty (no customer hint: no existence
    # read); one at a time it would be four statements each.
    assert len([s for s in statements if not s.startswith("SAVEPOINT")]) <= 4


async def test_a_new_senders_customer_identity_and_number_are_three_inserts(
    session: AsyncSession,
) -> None:
    # A first message creates its customer, identity and phone identifier; the identifier of a
    # customer created in this transaction is inserted without a look for an existing row.
    number = "+5511988770011"
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if not statement.startswith(("SAVEPOINT", "RELEASE")):
            statements.append(" ".join(statement.split()))

    engine = (await session.connection()).sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        resolved = await resolve_identity(session, observe(WhatsAppSender(f"whatsapp:{number}")))
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert resolved.outcome == "new"
    writes = [s.split(" (")[0] for s in statements if s.startswith("INSERT")]
    assert writes == [
        "INSERT INTO customers",
        "INSERT INTO channel_identities",
        "INSERT INTO customer_identifiers",
    ]
    # The graph's read of the number's holders stays; the new customer's own rows are not read.
    own = "FROM customer_identifiers WHERE customer_identifiers.customer_id ="
    assert not [s for s in statements if own in s]
    held = await customers.identifiers_of(session, resolved.customer_id)
    assert [(i.kind, i.value) for i in held] == [("phone", number)]

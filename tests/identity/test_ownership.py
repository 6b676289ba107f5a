from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from identity import (
    IDENTITY_RECORD,
    ChannelIdentityKey,
    OwnedRecord,
    OwnershipConflict,
    apply_plan,
    identity_keys_of,
    plan_merge,
    plan_split,
)

WA = ChannelIdentityKey.parse("whatsapp:+5511987654321")
TG = ChannelIdentityKey.parse("telegram:1111111")
WEB = ChannelIdentityKey.parse("web:acct:acct-42")


def identity(key: ChannelIdentityKey, customer: str) -> OwnedRecord:
    return OwnedRecord(IDENTITY_RECORD, f"id:{key}", customer, key)


RECORDS = (
    identity(WA, "a"),
    OwnedRecord("message", "m1", "a", WA),
    OwnedRecord("fact", "f1", "a", WA),
    identity(TG, "b"),
    identity(WEB, "b"),
    OwnedRecord("message", "m2", "b", TG),
    OwnedRecord("episode", "e1", "b", WEB),
    OwnedRecord("message", "m3", "c", ChannelIdentityKey.parse("telegram:5")),
)


def owners(records: tuple[OwnedRecord, ...] | list[OwnedRecord]) -> dict[str, str]:
    return {r.record_id: r.customer_id for r in records}


def test_merge_moves_everything_of_the_source_and_audits_it() -> None:
    plan = plan_merge("a", "b", RECORDS, actor="op@shop", reason="same person on a call")
    merged = owners(apply_plan(RECORDS, plan))
    assert merged == {**owners(RECORDS), "id:whatsapp:+5511987654321": "b", "m1": "b", "f1": "b"}
    audit = plan.audit
    assert (audit.action, audit.actor, audit.reason) == (
        "merge",
        "op@shop",
        "same person on a call",
    )
    assert (audit.from_customer, audit.to_customer, audit.identity_keys) == ("a", "b", (WA,))
    assert sorted(audit.moved) == [
        ("fact", "f1"),
        (IDENTITY_RECORD, "id:whatsapp:+5511987654321"),
        ("message", "m1"),
    ]


def test_split_returns_records_to_the_identity_they_came_from() -> None:
    plan = plan_split("b", [WEB], "d", RECORDS, actor="op", reason="different people")
    split = owners(apply_plan(RECORDS, plan))
    assert split["e1"] == "d" and split[f"id:{WEB}"] == "d"
    assert split["m2"] == "b" and split[f"id:{TG}"] == "b"
    assert plan.audit.action == "split" and plan.audit.identity_keys == (WEB,)


def test_merge_then_split_restores_ownership() -> None:
    merged = apply_plan(RECORDS, plan_merge("a", "b", RECORDS, actor="op", reason="r"))
    undo = plan_split("b", [WA], "a", merged, actor="op", reason="undo")
    assert apply_plan(merged, undo) == RECORDS


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: plan_merge("a", "a", RECORDS, actor="op", reason="r"), "itself"),
        (lambda: plan_merge("zzz", "a", RECORDS, actor="op", reason="r"), "no channel identity"),
        (lambda: plan_split("b", [], "d", RECORDS, actor="op", reason="r"), "nothing"),
        (lambda: plan_split("b", [WA], "d", RECORDS, actor="op", reason="r"), "does not belong"),
        (lambda: plan_split("b", [TG, WEB], "d", RECORDS, actor="op", reason="r"), "at least one"),
        (lambda: plan_split("b", [WEB], "c", RECORDS, actor="op", reason="r"), "new customer"),
        (lambda: plan_split("b", [WEB], "b", RECORDS, actor="op", reason="r"), "new customer"),
    ],
)
def test_inconsistent_operations_are_refused(call: Callable[[], object], message: str) -> None:
    with pytest.raises(OwnershipConflict, match=message):
        call()


def test_applying_a_stale_plan_is_refused() -> None:
    plan = plan_merge("a", "b", RECORDS, actor="op", reason="r")
    moved = apply_plan(RECORDS, plan)
    with pytest.raises(OwnershipConflict):
        apply_plan(moved, plan)


def test_identity_keys_of() -> None:
    assert identity_keys_of(RECORDS, "b") == tuple(sorted([TG, WEB]))
    assert identity_keys_of(RECORDS, "nobody") == ()


@st.composite
def ownerships(draw: st.DrawFn) -> tuple[OwnedRecord, ...]:
    """Customers c0..cN, each with identities and records sourced from its own identities."""
    records: list[OwnedRecord] = []
    customers = draw(st.integers(min_value=2, max_value=5))
    next_user = 1
    for c in range(customers):
        keys = []
        for _ in range(draw(st.integers(min_value=1, max_value=3))):
            key = ChannelIdentityKey.parse(f"telegram:{next_user}")
            next_user += 1
            keys.append(key)
            records.append(identity(key, f"c{c}"))
        for n in range(draw(st.integers(min_value=0, max_value=6))):
            kind = draw(st.sampled_from(["message", "fact", "episode", "identifier"]))
            source = draw(st.sampled_from(keys))
            records.append(OwnedRecord(kind, f"c{c}-{kind}-{n}", f"c{c}", source))
    return tuple(records)


@settings(max_examples=60, deadline=None)
@given(ownerships(), st.data())
def test_any_merge_is_undone_by_splitting_the_merged_identities(
    records: tuple[OwnedRecord, ...], data: st.DataObject
) -> None:
    customers = sorted({r.customer_id for r in records})
    source = data.draw(st.sampled_from(customers))
    target = data.draw(st.sampled_from([c for c in customers if c != source]))
    plan = plan_merge(source, target, records, actor="op", reason="r")
    merged = apply_plan(records, plan)
    assert not any(r.customer_id == source for r in merged)
    undo = plan_split(target, plan.audit.identity_keys, source, merged, actor="op", reason="undo")
    assert apply_plan(merged, undo) == records

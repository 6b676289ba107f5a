"""An operator's fact changes on a real session: a correction supersedes the fact with a
pinned, confirmed one sourced to an operator note; refusals are 400s with their codes."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from context import TiktokenCounter, load_encoding
from gateway.http.errors import BadRequest
from gateway.operators import facts as operator_facts
from gateway.storage.errors import RecordNotFound
from gateway.storage.records import NewFact, NewMessage
from gateway.storage.repositories import audit, customers, episodes, facts, messages

COUNTER = TiktokenCounter(load_encoding())


async def _customer_with_email(session: AsyncSession) -> tuple[str, int]:
    customer = await customers.create_customer(session, display_name="Ana")
    episode = await episodes.open_episode(session, customer_id=customer.id, channel="whatsapp")
    said = await messages.append_message(
        session,
        NewMessage(customer.id, episode.id, "whatsapp", "user", "ana@old.example", token_count=3),
    )
    fact = await facts.record_fact(
        session, customer.id, NewFact("email", "ana@old.example", "contact", said.id)
    )
    return customer.id, fact.id


async def _refusal(session: AsyncSession, customer_id: str, fact_id: int, **change: str) -> str:
    with pytest.raises(BadRequest) as refused:
        await operator_facts.correct_fact(
            session,
            COUNTER,
            customer_id,
            fact_id,
            change.get("value", "ana@new.example"),
            actor="ana.ops",
            reason=change.get("reason", "the customer wrote in"),
        )
    assert refused.value.status == 400
    return refused.value.code


async def test_a_correction_supersedes_the_fact_with_a_pinned_one_sourced_to_a_note(
    session: AsyncSession,
) -> None:
    customer_id, fact_id = await _customer_with_email(session)
    new, entry = await operator_facts.correct_fact(
        session,
        COUNTER,
        customer_id,
        fact_id,
        "  ana@new.example ",
        actor="ana.ops",
        reason=" the customer wrote in ",
    )
    assert (new.key, new.value, new.confidence) == ("email", "ana@new.example", 1.0)
    assert new.pinned and new.confirmed and "operator" in new.tags
    history = {f.id: f for f in await operator_facts.all_facts(session, customer_id)}
    assert history[fact_id].superseded_by == new.id and history[new.id].is_current
    note = await messages.get_message(session, customer_id, new.source_message_id)
    assert (note.channel, note.role) == (
        operator_facts.CONSOLE_CHANNEL,
        operator_facts.OPERATOR_ROLE,
    )
    assert "ana@new.example" in note.text and "the customer wrote in" in note.text
    assert (entry.actor, entry.action, entry.reason) == (
        "ana.ops",
        "correct_fact",
        "the customer wrote in",
    )
    assert entry.details["fact"] == fact_id and entry.details["new_fact"] == new.id
    # A second correction writes its note in the same console episode.
    again, _ = await operator_facts.correct_fact(
        session, COUNTER, customer_id, new.id, "ana@third.example", actor="ana.ops", reason="typo"
    )
    second_note = await messages.get_message(session, customer_id, again.source_message_id)
    assert second_note.episode_id == note.episode_id


async def test_corrections_are_refused_with_their_codes_and_change_nothing(
    session: AsyncSession,
) -> None:
    customer_id, fact_id = await _customer_with_email(session)
    assert await _refusal(session, customer_id, fact_id, reason="  ") == "reason_required"
    assert await _refusal(session, customer_id, fact_id, value=" ") == "value_required"
    assert await _refusal(session, customer_id, fact_id, value="ana@old.example") == (
        "value_unchanged"
    )
    assert [f.id for f in await operator_facts.all_facts(session, customer_id)] == [fact_id]
    assert await audit.list_audit(session, subject_id=customer_id) == []
    new, _ = await operator_facts.correct_fact(
        session, COUNTER, customer_id, fact_id, "ana@new.example", actor="a", reason="r"
    )
    assert await _refusal(session, customer_id, fact_id) == "fact_not_current"
    other = await customers.create_customer(session, display_name="Bia")
    with pytest.raises(RecordNotFound):
        await operator_facts.correct_fact(
            session, COUNTER, other.id, new.id, "bia@example.com", actor="a", reason="r"
        )


async def test_pins_and_retractions_are_audited_and_only_a_current_fact_is_retracted(
    session: AsyncSession,
) -> None:
    customer_id, fact_id = await _customer_with_email(session)
    pinned, entry = await operator_facts.set_fact_state(
        session, customer_id, fact_id, "pin", actor="ana.ops", reason="keep it"
    )
    assert pinned.pinned and (entry.action, entry.details["key"]) == ("pin_fact", "email")
    retracted, _ = await operator_facts.set_fact_state(
        session, customer_id, fact_id, "retract", actor="ana.ops", reason="wrong"
    )
    assert retracted.retracted and not retracted.is_current
    with pytest.raises(BadRequest) as again:
        await operator_facts.set_fact_state(
            session, customer_id, fact_id, "retract", actor="ana.ops", reason="wrong"
        )
    assert again.value.code == "fact_not_current"
    with pytest.raises(BadRequest) as unknown:
        await operator_facts.set_fact_state(
            session, customer_id, fact_id, "forget", actor="ana.ops", reason="why not"
        )
    assert (unknown.value.status, unknown.value.code) == (400, "bad_request")
    actions = [e.action for e in await audit.list_audit(session, subject_id=customer_id)]
    assert sorted(actions) == ["pin_fact", "retract_fact"]

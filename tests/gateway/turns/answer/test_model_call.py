"""The model call of a reply: the draft of an answer, of a failure, of repeated failures."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.providers import FALLBACK_MESSAGE
from gateway.providers.offline import OfflineProvider
from gateway.storage.message_meta import CANNED_FALLBACK, CANNED_HANDOFF, CANNED_OFFLINE
from gateway.storage.repositories import turns
from gateway.storage.updates import TurnOutcome, TurnUsage
from gateway.turns.answer import MODEL_FAILED
from gateway.turns.answer.canned_texts import FALLBACK_MESSAGES, HANDOFF_MESSAGES
from gateway.turns.answer.model_call import ModelCall
from gateway.turns.typing import Typing
from tests.gateway.turns.answer.models import ScriptedModel, pool_of
from tests.gateway.turns.answer.stored_turns import (
    answer_deps,
    prepared_reply_turn,
    store_next_message,
    store_pending_turn,
)
from tests.support.stored_conversations import COUNTER

NO_TYPING = Typing(None, "", None)


async def test_the_models_answer_is_drafted_with_its_usage(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    turn = await prepared_reply_turn(
        sessions, await store_pending_turn(sessions, "Tem o tênis 42?")
    )
    model = ScriptedModel("Temos sim.")
    draft = await ModelCall(answer_deps(sessions), providers=pool_of(model)).draft(turn, NO_TYPING)
    assert (draft.text, draft.canned, draft.handoff, draft.failed) == (
        "Temos sim.",
        None,
        None,
        False,
    )
    outcome = draft.outcome
    assert (outcome.status, outcome.provider, outcome.model, outcome.attempts) == (
        "done",
        "scripted",
        "scripted-1-2026",
        2,
    )
    assert outcome.usage == TurnUsage(120, 7, 100)
    assert outcome.report is not None and outcome.report == turn.assembled.window.report.to_dict()
    # The window sent ends with the customer's message.
    assert model.windows[0][-1].content == "Tem o tênis 42?"


async def test_the_offline_models_text_is_kept_out_of_memory(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    turn = await prepared_reply_turn(sessions, await store_pending_turn(sessions, "Oi"))
    offline = OfflineProvider(count=COUNTER.count)
    draft = await ModelCall(answer_deps(sessions), providers=pool_of(offline)).draft(
        turn, NO_TYPING
    )
    assert draft.canned == CANNED_OFFLINE and draft.outcome.status == "done"


async def test_a_failed_call_drafts_the_tenants_fallback(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    key = await store_pending_turn(sessions, "Oi")
    call = ModelCall(answer_deps(sessions), providers=pool_of(ScriptedModel(None)))
    turn = await prepared_reply_turn(sessions, key, handoff_after_failures=0)
    draft = await call.draft(turn, NO_TYPING)
    # The customer wrote Portuguese: the built-in fallback in Portuguese.
    assert (draft.text, draft.canned, draft.handoff) == (
        FALLBACK_MESSAGES["pt"],
        CANNED_FALLBACK,
        None,
    )
    assert (draft.outcome.status, draft.outcome.model, draft.outcome.attempts) == (
        "failed",
        "scripted-1",
        3,
    )
    assert draft.outcome.error is not None and "503" in draft.outcome.error
    assert draft.outcome.usage is None

    own = await prepared_reply_turn(
        sessions, key, handoff_after_failures=0, fallback_message="Já volto."
    )
    assert (await call.draft(own, NO_TYPING)).text == "Já volto."


async def test_an_english_customer_gets_the_english_fallback(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    key = await store_pending_turn(sessions, "Where is my order? It has not arrived")
    call = ModelCall(answer_deps(sessions), providers=pool_of(ScriptedModel(None)))
    turn = await prepared_reply_turn(sessions, key, handoff_after_failures=0)
    assert (await call.draft(turn, NO_TYPING)).text == FALLBACK_MESSAGE


async def test_the_tenants_count_of_failures_in_a_row_hands_over(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    key = await store_pending_turn(sessions, "Oi")
    call = ModelCall(answer_deps(sessions), providers=pool_of(ScriptedModel(None)))
    first = await prepared_reply_turn(sessions, key, handoff_after_failures=2)
    # No failure before this one: the fallback.
    assert (await call.draft(first, NO_TYPING)).canned == CANNED_FALLBACK
    async with sessions.begin() as session:
        await turns.record_outcome(session, first.pending.turn.id, TurnOutcome(status="failed"))
    await store_next_message(sessions, first.pending, "Alô?")
    second = await prepared_reply_turn(sessions, key, handoff_after_failures=2)
    draft = await call.draft(second, NO_TYPING)
    assert (draft.text, draft.canned, draft.handoff) == (
        HANDOFF_MESSAGES["pt"],
        CANNED_HANDOFF,
        MODEL_FAILED,
    )
    assert draft.failed

    at_once = await prepared_reply_turn(sessions, key, handoff_after_failures=1)
    assert (await call.draft(at_once, NO_TYPING)).handoff == MODEL_FAILED

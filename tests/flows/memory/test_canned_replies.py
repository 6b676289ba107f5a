"""The gateway's own replies — the offline model's notice, the fallback after a model failure —
are marked on the stored message and kept out of memory: never summarized, never the source of
a fact, never counted towards the compaction threshold."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select, update

from gateway.keys import MEMORY
from gateway.storage.message_meta import CANNED_KEY, CANNED_OFFLINE
from gateway.storage.models import Episode, EpisodeSummary, Fact, Message
from gateway.storage.repositories import tenants
from tests.support.context_api import post_context
from tests.support.stack import API_KEY, running_stack
from tests.support.webchat import signed_visitor

QUESTION = (
    "O pedido {n} ainda não chegou; comprei na semana passada, paguei no cartão e o rastreio "
    "não muda desde segunda-feira. Meu e-mail é ana.souza@example.com, se precisar."
)


async def test_offline_replies_are_marked_and_left_out_of_summaries_and_facts(
    tmp_path: Path,
) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        async with stack.sessions().begin() as session:
            await tenants.save_tenant_settings(
                session,
                domain="default",
                settings={"threshold_tokens": 400, "low_water_tokens": 100, "keep_recent_turns": 2},
            )
        visitor = await signed_visitor(stack.client)
        for index in range(8):
            response = await stack.client.post(
                "/webchat/messages",
                json={
                    "visitor_id": visitor,
                    "client_message_id": f"m{index}",
                    "text": QUESTION.format(n=4400 + index),
                },
            )
            assert response.status == 202
            await stack.idle()
            await stack.app[MEMORY].queue.drained()  # type: ignore[attr-defined]
        async with stack.sessions()() as session:
            replies = list(
                (await session.scalars(select(Message).where(Message.role == "assistant"))).all()
            )
            summaries = list((await session.scalars(select(EpisodeSummary))).all())
            facts = list((await session.scalars(select(Fact))).all())
    assert len(replies) == 8
    assert all((reply.extra or {}).get(CANNED_KEY) == CANNED_OFFLINE for reply in replies)
    [summary] = summaries  # the customer's words passed the threshold: compacted
    assert "customer: O pedido [order_id] ainda não chegou" in summary.summary  # masked facts
    assert "offline" not in summary.summary and "Relaydesk" not in summary.summary
    reply_ids = {reply.id for reply in replies}
    sources = {sentence["source_message_id"] for sentence in summary.sentences or []}
    assert sources and not sources & reply_ids
    assert facts and all(fact.source_message_id not in reply_ids for fact in facts)


async def test_offline_replies_are_never_recalled_in_another_episode(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        visitor = await signed_visitor(stack.client)
        response = await stack.client.post(
            "/webchat/messages",
            json={
                "visitor_id": visitor,
                "client_message_id": "m1",
                "text": "O pedido 4471 ainda não chegou, qual o prazo de entrega?",
            },
        )
        assert response.status == 202
        await stack.idle()
        # A later conversation of the same visitor (its first episode closed) asks again.
        async with stack.sessions().begin() as session:
            await session.execute(update(Episode).values(status="closed"))
        body = await post_context(
            stack.client,
            {"Authorization": f"Bearer {API_KEY}"},
            channel="webchat",
            external_id=visitor,
            message="E o prazo de entrega do pedido 4471?",
        )
    system = body["messages"][0]["content"]  # type: ignore[index]
    assert "qual o prazo de entrega?" in system  # the customer's own line is recalled
    assert "without a language model" not in system  # the offline notice is not

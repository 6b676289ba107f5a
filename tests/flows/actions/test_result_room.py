"""Tool results have a room of their own in the window: kept off the first input, spent
result by result, a result past it cut with a visible mark and the cut in the turn's report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp import web
from sqlalchemy import select

from context.tool_results import RESULTS_CUT_MARK
from gateway.storage.models import TurnRow
from tests.flows.actions.support import acting_stack, save_settings, serving
from tests.support.openai_server import Call, FakeOpenAI
from tests.support.webchat import signed_visitor

LONG = " ".join(f"linha {n} do histórico do pedido" for n in range(300))


def _catalog(call: Call) -> list[tuple[str, str]] | None:
    """Looks an order up twice, in two rounds, then answers."""
    if len(call.tool_results) >= 2:
        return None
    return [("order_history", '{"order_id": "4471"}')]


async def _history(request: web.Request) -> web.Response:
    return web.json_response({"history": LONG})


async def _turn_report(tmp_path: Path, tenant: dict[str, Any]) -> tuple[dict[str, Any], FakeOpenAI]:
    api = web.Application()
    api.router.add_post("/history", _history)
    model = FakeOpenAI(tool_calls_for=_catalog, reply="pronto")
    async with (
        serving(api) as url,
        model.serving() as model_url,
        acting_stack(tmp_path, model_url) as stack,
    ):
        history = {
            "name": "order_history",
            "description": "An order's history",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            "min_link_level": "anonymous",
            "endpoint": {"url": f"{url}/history"},
        }
        await save_settings(stack, {"tools": [history], **tenant})
        visitor = await signed_visitor(stack.client)
        response = await stack.client.post(
            "/webchat/messages",
            json={"visitor_id": visitor, "text": "histórico do 4471?", "client_message_id": "c1"},
        )
        assert response.status == 202
        await stack.idle()
        async with stack.sessions()() as session:
            [report] = [turn.report for turn in await session.scalars(select(TurnRow))]
        assert report is not None
        return dict(report), model


async def test_results_past_the_room_are_cut_and_reported(tmp_path: Path) -> None:
    report, model = await _turn_report(
        tmp_path, {"max_result_tokens": 300, "tool_results_tokens": 400}
    )

    room = report["tool_results"]
    assert room["budget"] == 400 and room["results"] == 2
    assert room["cut"] == 1 and room["cut_tokens"] > 100
    assert room["tokens"] <= 400
    # The window the model was first sent left that room free.
    assert report["input_budget"] == 8192 - 800 - 192 - 400
    answered = [call for call in model.calls if call.tool_results][-1]
    first, second = (message["content"] for message in answered.tool_results)
    assert not first.endswith(RESULTS_CUT_MARK) and second.endswith(RESULTS_CUT_MARK)


async def test_results_within_the_room_go_whole(tmp_path: Path) -> None:
    report, model = await _turn_report(
        tmp_path, {"max_result_tokens": 300, "tool_results_tokens": 1200}
    )

    assert report["tool_results"]["cut"] == 0
    assert report["tool_results"]["results"] == 2
    assert all(
        not message["content"].endswith(RESULTS_CUT_MARK)
        for message in [call for call in model.calls if call.tool_results][-1].tool_results
    )

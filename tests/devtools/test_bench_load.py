"""`relaydesk bench reply --model-latency`: the slow local model's protocol (JSON and
server-sent events, read with httpx and the gateway's own provider), its in-flight counting and
first-token times, and the load mode end to end at a tiny size."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid

import httpx
import pytest
from aiohttp import WSMsgType, web
from httpx_sse import aconnect_sse

from context import ChatMessage
from devtools.bench.load_report import LoadResult, SideResult
from devtools.bench.load_tool_report import ToolRun
from devtools.bench.load_webchat import summarize, visit
from devtools.bench.model_server import SlowModel
from devtools.bench.process_cpu import tree_cpu_s
from devtools.bench.reply_load import LoadOptions, run_load_bench
from devtools.loopback import serving_on_loopback
from gateway.cli import main
from gateway.providers.openai_compat import OpenAICompatProvider
from tests.support.databases import POSTGRES_URL, REDIS_URL, require_postgres_and_redis

# Serial: a benchmark: its figures are timings against a model's latency.
pytestmark = pytest.mark.serial

LATENCY_S = 0.2
# A sleep may end a hair early on a coarse clock; nothing else makes the server early.
CLOCK_SLACK_S = 0.005


def _body(text: str, **extra: object) -> dict[str, object]:
    return {"model": "bench-slow", "messages": [{"role": "user", "content": text}], **extra}


async def test_a_plain_request_is_answered_after_the_latency_with_usage() -> None:
    model = SlowModel(LATENCY_S, reply_tokens=6)
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        started = time.perf_counter()
        response = await http.post(f"{base_url}/chat/completions", json=_body("[ref-1] oi"))
        waited = time.perf_counter() - started
    assert response.status_code == 200
    reply = response.json()
    assert reply["object"] == "chat.completion"
    assert reply["model"] == "bench-slow"
    [choice] = reply["choices"]
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"].startswith("[ref-1] ")  # quotes the reference
    assert len(choice["message"]["content"].split()) == 6
    assert reply["usage"] == {"prompt_tokens": 2, "completion_tokens": 6, "total_tokens": 8}
    assert waited >= LATENCY_S - CLOCK_SLACK_S
    [request] = model.requests
    assert not request.streamed
    assert request.last_user_text == "[ref-1] oi"
    assert request.first_token_s is not None
    assert LATENCY_S - CLOCK_SLACK_S <= request.first_token_s <= waited
    assert model.request_quoting("ref-1") is request
    assert model.request_quoting("ref-2") is None
    assert (model.in_flight, model.peak_in_flight) == (0, 1)


async def test_the_gateway_provider_reads_the_plain_answer() -> None:
    model = SlowModel(0.05)
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        provider = OpenAICompatProvider(http=http, model="bench-slow", base_url=base_url)
        completion = await provider.complete(
            [ChatMessage("system", "be brief"), ChatMessage("user", "[c1] where is my order?")],
            max_tokens=200,
        )
    assert completion.text.startswith("[c1] Obrigado")
    assert completion.usage.prompt_tokens == 7
    assert completion.usage.completion_tokens == 24
    assert completion.finish_reason == "stop"


async def test_a_streamed_request_sends_the_first_token_after_the_latency_then_at_the_rate() -> (
    None
):
    rate = 20.0
    tokens = 5
    model = SlowModel(LATENCY_S, stream_rate=rate, reply_tokens=tokens)
    body = _body("[s1] oi", stream=True, stream_options={"include_usage": True})
    arrivals: list[tuple[float, str]] = []
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        started = time.perf_counter()
        async with aconnect_sse(http, "POST", f"{base_url}/chat/completions", json=body) as events:
            assert events.response.headers["content-type"].startswith("text/event-stream")
            async for event in events.aiter_sse():
                arrivals.append((time.perf_counter() - started, event.data))
    assert arrivals[-1][1] == "[DONE]"
    chunks = [json.loads(data) for _, data in arrivals[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert len({chunk["id"] for chunk in chunks}) == 1
    content = [
        (at, chunk["choices"][0]["delta"]["content"])
        for (at, _), chunk in zip(arrivals, chunks, strict=False)
        if chunk["choices"] and "content" in chunk["choices"][0]["delta"]
    ]
    assert len(content) == tokens
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(piece for _, piece in content)
    assert text.startswith("[s1] ") and len(text.split()) == tokens
    # First token after the latency, the others spaced by the rate.
    first_at, last_at = content[0][0], content[-1][0]
    assert first_at >= LATENCY_S - CLOCK_SLACK_S
    assert last_at - first_at >= (tokens - 1) / rate - 2 * CLOCK_SLACK_S
    # After the tokens: the stop chunk, then the usage chunk (no choices), then [DONE].
    stop, usage = chunks[-2], chunks[-1]
    assert stop["choices"] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 2, "completion_tokens": 5, "total_tokens": 7}
    [request] = model.requests
    assert request.streamed
    assert request.first_token_s is not None
    assert LATENCY_S - CLOCK_SLACK_S <= request.first_token_s <= first_at
    assert (
        request.finished is not None and request.finished - request.received >= last_at - first_at
    )


async def test_a_stream_without_include_usage_has_no_usage_chunk() -> None:
    model = SlowModel(0.0, reply_tokens=3)
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        url = f"{base_url}/chat/completions"
        async with aconnect_sse(http, "POST", url, json=_body("oi", stream=True)) as events:
            data = [event.data async for event in events.aiter_sse()]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(item) for item in data[:-1]]
    assert all("usage" not in chunk for chunk in chunks)
    assert len(chunks) == 3 + 1  # three tokens and the stop chunk
    # Without a rate the tokens after the first come at once; no reference, no quote.
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == (
        "Obrigado pela mensagem."
    )


async def test_requests_in_flight_and_their_peak_are_counted() -> None:
    model = SlowModel(0.3)
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        url = f"{base_url}/chat/completions"
        calls = [
            asyncio.create_task(http.post(url, json=_body(f"[p{i}] oi", stream=i % 2 == 1)))
            for i in range(3)
        ]
        await asyncio.sleep(0.15)
        assert model.in_flight == 3
        responses = await asyncio.gather(*calls)
        assert [r.status_code for r in responses] == [200, 200, 200]
        assert (model.in_flight, model.peak_in_flight) == (0, 3)
        await http.post(url, json=_body("[p3] oi"))
    assert model.peak_in_flight == 3  # one at a time afterwards leaves the peak where it was
    assert [r.streamed for r in model.requests] == [False, True, False, False]
    model.reset()
    assert (model.requests, model.peak_in_flight) == ([], 0)


async def test_a_request_without_messages_is_refused() -> None:
    model = SlowModel(LATENCY_S)
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        started = time.perf_counter()
        response = await http.post(f"{base_url}/chat/completions", json={"model": "m"})
        waited = time.perf_counter() - started
    assert response.status_code == 400
    assert "messages" in response.json()["error"]["message"]
    assert waited < LATENCY_S  # refused at once, not after the latency
    assert model.requests == [] and model.peak_in_flight == 0


def _streaming_chat(model_url: str) -> web.Application:
    """The web chat websocket of a gateway that streams: each message's reply is asked of the
    model with ``stream: true`` and relayed as partial frames, then sent whole."""

    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async with httpx.AsyncClient() as http:
            async for frame in ws:
                if frame.type != WSMsgType.TEXT:
                    continue
                data = json.loads(frame.data)
                if data["type"] == "hello":
                    await ws.send_json({"type": "ready", "visitor_id": data["visitor_id"]})
                    continue
                cid = data["client_message_id"]
                await ws.send_json({"type": "ack", "client_message_id": cid, "message_id": "1"})
                so_far = ""
                body = _body(data["text"], stream=True)
                url = f"{model_url}/chat/completions"
                async with aconnect_sse(http, "POST", url, json=body) as events:
                    async for event in events.aiter_sse():
                        if event.data == "[DONE]":
                            break
                        delta = json.loads(event.data)["choices"][0]["delta"]
                        if delta.get("content"):
                            so_far += delta["content"]
                            await ws.send_json({"type": "partial", "reply_to": cid, "text": so_far})
                await ws.send_json({"type": "message", "role": "assistant", "text": so_far})
        return ws

    async def visitors(request: web.Request) -> web.Response:
        return web.json_response({"visitor_id": uuid.uuid4().hex}, status=201)

    app = web.Application()
    app.router.add_get("/webchat/ws", socket)
    app.router.add_post("/webchat/visitors", visitors)
    return app


async def test_visitors_time_the_first_partial_frame_of_a_streamed_reply() -> None:
    model = SlowModel(LATENCY_S, stream_rate=50.0, reply_tokens=10)
    async with (
        model.serving() as model_url,
        serving_on_loopback(_streaming_chat(model_url)) as gateway_url,
    ):
        visits = await visit(gateway_url, 3, "t1", timeout_s=10)
    assert [v.reference for v in visits] == ["t1w0", "t1w1", "t1w2"]
    for v in visits:
        assert v.first_partial is not None and v.final is not None
        # The first piece comes well before the whole reply (9 more tokens at 50/s).
        assert v.sent < v.first_partial < v.final - 0.1
    result = summarize(visits, model)
    assert (result.visitors, result.answered, result.streamed) == (3, 3, True)
    assert result.server_first_token_ms >= (LATENCY_S - CLOCK_SLACK_S) * 1000
    assert result.client_ms >= result.server_first_token_ms
    assert "time to the first streamed token" in result.line()


async def test_load_bench_at_a_tiny_size() -> None:
    await require_postgres_and_redis()
    latency_s = 0.3
    options = LoadOptions(
        model_latency_s=latency_s,
        customers=3,
        rate=4.0,
        seconds=1.5,
        background=1,
        webchat=2,
        postgres_url=POSTGRES_URL,
        redis_url=REDIS_URL,
    )
    progress: list[str] = []
    result = await run_load_bench(options, progress.append)

    figures = json.loads(result.json_line())
    assert set(figures) == {
        "model_latency_s",
        "tool_latency_s",
        "stream_rate",
        "customers",
        "rate",
        "seconds",
        "background",
        "offline",
        "slow",
        "replies_per_s_ratio",
        "tools",
        "tool_calls",
        "tool_goal",
        "webchat",
        "embedded_history",
    }
    assert figures["embedded_history"] is None  # without --embedded-history
    # Without --tool-latency there is no side with the action.
    assert [figures[key] for key in ("tool_latency_s", "tools", "tool_calls", "tool_goal")] == [
        None
    ] * 4
    offline, slow = figures["offline"], figures["slow"]
    for side in (offline, slow):
        assert side["offered"] == 6, progress
        assert (side["replies"], side["missing"], side["refused"]) == (6, 0, 0), progress
        assert side["fallbacks"] == 0
        # The gateway's processes worked for every reply; the figure is theirs per reply.
        assert side["gateway_cpu_s"] > 0
        # Both figures are rounded to hundredths: the seconds' rounding spread over the replies.
        assert side["cpu_ms_per_reply"] == pytest.approx(
            side["gateway_cpu_s"] * 1000 / side["replies"], abs=5 / side["replies"] + 0.01
        )
        assert 0 < side["p50_ms"] <= side["p99_ms"]
        assert 0 < side["ack_p99_ms"] <= side["p99_ms"]
        # The last reply comes no sooner than the last due time, 1.25 s after the first, and
        # the first no later than the slowest latency (p99 of six samples is their largest):
        # five intervals over at least that span.
        shortest_span_s = 1.25 - side["p99_ms"] / 1000
        assert side["replies_per_s"] > 0
        if shortest_span_s > 0:
            assert side["replies_per_s"] <= 5 / shortest_span_s
    # The offline model never reaches the model server; the slow one for every message.
    assert (offline["peak_in_flight"], offline["model_requests"]) == (0, 0)
    assert slow["peak_in_flight"] >= 1
    assert slow["model_requests"] == 6
    assert slow["p50_ms"] >= latency_s * 1000
    assert figures["replies_per_s_ratio"] == pytest.approx(
        slow["replies_per_s"] / offline["replies_per_s"], abs=2e-3
    )
    webchat = figures["webchat"]
    # Two rounds of two new visitors each: the gateway's first, then the measured one.
    for round_ in (webchat, webchat["first_round"]):
        assert (round_["visitors"], round_["answered"]) == (2, 2)
        assert round_["server_first_token_ms"] >= latency_s * 1000 - CLOCK_SLACK_S * 1000
        # The visitor sends before the server receives, and sees the text after it is written.
        assert round_["client_ms"] >= round_["server_first_token_ms"]
        assert round_["difference_ms"] == pytest.approx(
            round_["client_ms"] - round_["server_first_token_ms"], abs=0.02
        )
    assert "first_round" not in webchat["first_round"]
    rows = result.table().splitlines()
    assert rows[2].endswith("CPU ms/reply")
    assert rows[4].endswith(f" {slow['cpu_ms_per_reply']:.1f}")
    assert rows[3].startswith("offline (instant)") and rows[4].startswith("slow (0.3 s)")
    assert rows[5].startswith("replies/s slow / offline")
    assert rows[-1].startswith("web chat, 2 visitors")
    expected = "time to the first streamed token" if webchat["streamed"] else "not streamed"
    assert expected in rows[-1]
    first = webchat["first_round"]["difference_ms"]
    shown = re.search(
        r"\(the gateway's first round of web chat visitors: (-?[\d.]+) ms\)$", rows[-1]
    )
    assert shown is not None, rows[-1]
    # The JSON keeps two decimals and the table one: both round the same measurement.
    assert float(shown.group(1)) == pytest.approx(first, abs=0.051)


async def test_load_bench_with_a_read_tool_at_a_tiny_size() -> None:
    await require_postgres_and_redis()
    model_s, tool_s = 0.3, 0.1
    options = LoadOptions(
        model_latency_s=model_s,
        tool_latency_s=tool_s,
        customers=3,
        rate=4.0,
        seconds=1.5,
        background=1,
        postgres_url=POSTGRES_URL,
        redis_url=REDIS_URL,
    )
    progress: list[str] = []
    result = await run_load_bench(options, progress.append)

    figures = json.loads(result.json_line())
    assert figures["tool_latency_s"] == tool_s
    slow, tools = figures["slow"], figures["tools"]
    for side in (figures["offline"], slow, tools):
        assert (side["offered"], side["replies"], side["missing"]) == (6, 6, 0), progress
        assert side["fallbacks"] == 0, progress
        assert side["gateway_cpu_s"] > 0
    # The action is the tools side's alone: the slow side makes one model call per reply, the
    # tools side two (the call, then the answer), with the API between them.
    assert slow["model_requests"] == 6
    assert tools["model_requests"] == 12
    calls = figures["tool_calls"]
    assert calls == {
        "latency_s": tool_s,
        "calls": 6,  # one per reply
        "calls_per_reply": 1.0,
        "orders": 6,  # each message's own reference looked up, none twice
        "repeated": 0,
        "refused": 0,
        "model_calls": 6,
        "failed_results": 0,
        "peak_in_flight": calls["peak_in_flight"],
        "connections": calls["connections"],
    }
    assert calls["peak_in_flight"] >= 1
    assert 1 <= calls["connections"] <= calls["calls"]
    # Two model latencies and the action's, one after the other, before every reply.
    assert tools["p50_ms"] >= (2 * model_s + tool_s) * 1000
    assert tools["p50_ms"] > slow["p50_ms"]
    goal = figures["tool_goal"]
    assert goal["p99_bound_ms"] == pytest.approx((2 * model_s + tool_s + 1) * 1000)
    assert goal["p99_ms"] == tools["p99_ms"]
    assert goal["p99_met"] == (tools["p99_ms"] <= goal["p99_bound_ms"])
    assert goal["ratio"] == pytest.approx(tools["replies_per_s"] / slow["replies_per_s"], abs=2e-3)
    assert goal["ratio_met"] == (goal["ratio"] >= 0.9)
    rows = result.table().splitlines()
    assert "the 3 sides one after the other" in rows[1]
    assert rows[3].startswith("offline (instant)") and rows[4].startswith("slow (0.3 s) ")
    assert rows[5].startswith("slow (0.3 s) + tool (0.1 s)")
    assert rows[6].startswith("replies/s slow / offline")
    assert rows[7].startswith(f"replies/s with the tool / without: {goal['ratio']:.3f}")
    assert rows[8].startswith(f"p99 with the tool: {goal['p99_ms']:.0f} ms (bound 2 x 0.3 s")
    assert rows[9].startswith("read tool (0.1 s): 6 calls for 6 replies (1.00 per reply")


def _side(model: str) -> SideResult:
    return SideResult(model, 10, 0, (100.0,) * 10, (5.0,) * 10, 0, 2.0, 1.0, 1, 10)


@pytest.mark.parametrize(
    ("customers", "tool_latency_s", "note"),
    [
        (40, None, "0.80 s apart, less than a turn takes (2 s of model): "),
        (40, 0.3, "(4.3 s of model and tool): "),
        (99, None, "give at least 100 customers"),
        (214, 0.3, "give at least 215 customers"),
        (100, None, ""),
        (215, 0.3, ""),
    ],
)
def test_the_table_warns_when_each_customer_queues_behind_itself(
    customers: int, tool_latency_s: float | None, note: str
) -> None:
    tool_run = None
    if tool_latency_s is not None:
        tool_run = ToolRun(tool_latency_s, 10, 10, 0, 0, 10, 0, 1, 1)
    result = LoadResult(
        offline=_side("offline"),
        slow=_side("slow"),
        webchat=None,
        customers=customers,
        rate=50.0,
        seconds=1.0,
        background=2,
        model_latency_s=2.0,
        stream_rate=None,
        tools=None if tool_run is None else _side("tools"),
        tool_run=tool_run,
    )
    table = result.table()
    if note:
        assert note in result.queueing_note()
        assert result.queueing_note() in table.splitlines()
    else:
        assert result.queueing_note() == ""
        assert "note:" not in table


def test_the_cpu_of_a_process_counts_the_children_it_started() -> None:
    # The parent only waits; its child spins for about half a second of CPU, then waits too.
    script = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    end = time.process_time() + 0.5\n"
        "    while time.process_time() < end: pass\n"
        "    time.sleep(30); os._exit(0)\n"
        "time.sleep(30)\n"
    )
    # A session of its own: the child is stopped with its parent, as one process group.
    parent = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        time.sleep(1.5)
        measured = tree_cpu_s([parent.pid])
        alone = tree_cpu_s([parent.pid + 10_000_000])  # no such process
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()
    if measured is None:
        pytest.skip("no /proc here")
    assert 0.45 <= measured < 1.5
    assert alone == 0.0


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--rate", "5"], "--rate need --model-latency"),
        (["--tool-latency", "0.3"], "--tool-latency need --model-latency"),
        (["--model-latency", "1", "--tool-latency", "31"], "tool latency must be above 0"),
        (["--webchat", "2", "--seconds", "3"], "--seconds, --webchat need --model-latency"),
        (["--model-latency", "1", "--messages", "3"], "--messages is not for the load mode"),
        (["--model-latency", "31"], "at most 30 s"),
    ],
)
def test_load_options_are_refused_where_they_do_not_apply(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "reply", *argv]) == 2
    assert complaint in capsys.readouterr().err

"""`relaydesk demo` runs the whole story offline; its output is checked."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from devtools.demo import PHONE, main, run_demo, window_against_history
from gateway.http.access_log import ACCESS_LOGGER


async def test_demo_tells_the_multichannel_story(tmp_path: Path) -> None:
    out = io.StringIO()
    result = await run_demo(tmp_path, out)
    text = out.getvalue()
    identities = {i["external_id"]: i["link_level"] for i in result.profile["identities"]}
    assert identities == {
        "web:acct:acct-ana": "verified",
        f"whatsapp:{PHONE}": "verified",
        f"phone:{PHONE}": "verified",  # the call center named the customer
    }
    system = result.context["messages"][0]["content"]
    assert "[phone · transcript · confidence" in system
    assert "[webchat · typed · " in system
    assert '- order_id: "PED-4471"' in system
    assert "webhook answered 200" in text
    assert "offline mode" in text
    assert "E o meu pedido PED-4471?" in text
    assert result.context["messages"][-1] == {"role": "user", "content": "E o meu pedido PED-4471?"}
    assert result.context["report"]["estimated_tokens"] <= result.context["report"]["input_budget"]
    for section in (
        "1. Web chat",
        "2. WhatsApp",
        "3. Phone",
        "4. One customer",
        "5. The window",
        "6. Budget",
        "7. Where to look next",
    ):
        assert section in text


async def test_demo_prints_rounded_figures_both_costs_and_where_to_go_next(tmp_path: Path) -> None:
    out = io.StringIO()
    result = await run_demo(tmp_path, out)
    text = out.getvalue()
    report = result.context["report"]
    assert "customer confidence 0.83\n" in text
    assert "0.8300000000000002" not in text
    # Both costs, whichever is larger: never a bare "savings 0.0".
    assert (
        f"window {report['estimated_tokens']} tokens, "
        f"whole history {report['full_history_tokens']} tokens"
    ) in text
    for pointer in ("/chat", "/console", "relaydesk operator add NAME --admin", "docs/index.md"):
        assert pointer in text


def test_a_window_cheaper_than_the_history_reports_the_share_saved() -> None:
    report = {"estimated_tokens": 1_000, "full_history_tokens": 4_000, "input_budget": 7_200}
    assert window_against_history(report) == (
        "window 1000 tokens, whole history 4000 tokens (same instruction and state)",
        "saved: 75% of the whole history's tokens",
    )


def test_a_window_dearer_than_a_short_history_says_nothing_was_saved() -> None:
    report = {"estimated_tokens": 276, "full_history_tokens": 217, "input_budget": 7_200}
    lines = window_against_history(report)
    assert lines[0] == "window 276 tokens, whole history 217 tokens (same instruction and state)"
    assert lines[1].startswith("nothing saved: a history this short fits whole")
    assert "(7200 tokens)" in lines[3]


def test_the_demo_command_keeps_access_lines_out_of_its_story(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    access = logging.getLogger(ACCESS_LOGGER)
    others = ("", "relaydesk", "relaydesk.memory", "relaydesk.deliver", "relaydesk.turns")
    levels_before = {name: logging.getLogger(name).level for name in others}
    out = io.StringIO()
    try:
        assert main(tmp_path, out) == 0
    finally:
        access.setLevel(logging.NOTSET)  # other tests here read access lines
    assert "5. The window Relaydesk would send" in out.getvalue()
    assert not [r for r in caplog.records if r.name == ACCESS_LOGGER]
    # The rest logs as it did (which lines a short run writes depends on its background work).
    assert {name: logging.getLogger(name).level for name in others} == levels_before

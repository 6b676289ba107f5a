"""`relaydesk demo` runs the whole story offline; its output is checked."""

from __future__ import annotations

import io
from pathlib import Path

from devtools.demo import PHONE, run_demo


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
    ):
        assert section in text

"""docs/channels/twilio-whatsapp.md followed as written: the variables its step 2 sets and the
URL its table says to paste in Twilio's *When a message comes in*, with Twilio played by the
local stand-in (it signs each webhook over the URL pasted in its console, as Twilio does). A
sandbox message is answered from the sandbox number; the guide's first usual mistake (a
`RELAYDESK_PUBLIC_URL` that is not the tunnel's https address) is refused with the log line the
guide shows, naming the URL the signature was checked over."""

from __future__ import annotations

import logging
import re
import uuid
from pathlib import Path

import pytest

from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.whatsapp_stack import ACCOUNT, TOKEN, whatsapp_stack

GUIDE = (
    Path(__file__).resolve().parents[3] / "docs" / "channels" / "twilio-whatsapp.md"
).read_text()
TUNNEL = "https://tunnel-4f2a.example.org"  # what `ngrok http 8080` would print
PHONE = "+5511998765432"


def pasted_path() -> str:
    """The path the guide's table says to paste after RELAYDESK_PUBLIC_URL."""
    row = re.search(
        r"\| \*When a message comes in\* \(method `POST`\) \| `RELAYDESK_PUBLIC_URL(/[^`]+)`", GUIDE
    )
    assert row is not None, "the guide's table lost its When a message comes in row"
    return row.group(1)


def step_two_settings() -> dict[str, str]:
    """The variables the guide's step 2 exports, with their values as written."""
    step = GUIDE[GUIDE.index("## 2. Configure the gateway") : GUIDE.index("## 3.")]
    return dict(re.findall(r"^export (\w+)=(\S+)", step, flags=re.MULTILINE))


def test_step_two_sets_what_the_sandbox_needs() -> None:
    assert set(step_two_settings()) == {
        "RELAYDESK_PUBLIC_URL",
        "TWILIO_ACCOUNT_SID",
        "TWILIO_AUTH_TOKEN",
        "TWILIO_WHATSAPP_FROM",
    }
    assert step_two_settings()["TWILIO_WHATSAPP_FROM"] == "whatsapp:+14155238886"
    assert pasted_path() == "/webhooks/twilio/whatsapp"


async def test_a_sandbox_message_sent_as_the_guide_says_is_answered(tmp_path: Path) -> None:
    sandbox = step_two_settings()["TWILIO_WHATSAPP_FROM"]
    async with whatsapp_stack(tmp_path, public_url=TUNNEL) as relay:
        params = inbound_params(f"SM{uuid.uuid4().hex}", f"whatsapp:{PHONE}", "oi", account=ACCOUNT)
        params["To"] = sandbox
        # Twilio signs over the URL pasted in its console: the tunnel + the guide's path.
        answered = await post_signed(
            relay.stack.client, params, token=TOKEN, public_url=TUNNEL, path=pasted_path()
        )
        assert answered.status == 200
        await relay.stack.idle()
        assert [(sent["From"], sent["To"]) for sent in relay.twilio.created] == [
            (sandbox, f"whatsapp:{PHONE}")
        ]
        # The reply's status reports come back to the gateway through the tunnel too.
        assert relay.twilio.created[0]["StatusCallback"].startswith(
            f"{TUNNEL}/webhooks/twilio/status?"
        )


async def test_the_guides_first_mistake_leaves_the_line_it_shows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="relaydesk.refusals")
    plain = TUNNEL.replace("https://", "http://")  # `http` instead of `https`
    async with whatsapp_stack(tmp_path, public_url=plain) as relay:
        params = inbound_params(f"SM{uuid.uuid4().hex}", f"whatsapp:{PHONE}", "oi", account=ACCOUNT)
        refused = await post_signed(
            relay.stack.client, params, token=TOKEN, public_url=TUNNEL, path=pasted_path()
        )
        assert refused.status == 403
        await relay.stack.idle()
        assert relay.twilio.created == []
    lines = [r for r in caplog.records if r.name == "relaydesk.refusals"]
    assert len(lines) == 1
    fields = lines[0].fields  # type: ignore[attr-defined]
    assert fields["reason"] == "signature_mismatch"
    assert fields["detail"] == "X-Twilio-Signature does not match"
    assert fields["signed_url"] == f"{plain}{pasted_path()}"
    # The guide shows that same line for that mistake.
    assert '"reason": "signature_mismatch", "detail": "X-Twilio-Signature does not match"' in GUIDE

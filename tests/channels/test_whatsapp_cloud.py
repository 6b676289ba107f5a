"""The WhatsApp Cloud API adapter on recorded webhook bodies (every case read into a typed
message or ignored on purpose), its signature and subscription checks, and its Graph API calls
through httpx to a local server speaking the Graph API."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from channels.base import (
    Media,
    MediaFetch,
    OutboundMessage,
    PayloadInvalid,
    RawRequest,
    SendFailed,
    SendReference,
    SignatureInvalid,
    Template,
    TypingSignals,
)
from channels.whatsapp_cloud import MAX_TEXT_CHARS, SIGNATURE_HEADER, WhatsAppCloudChannel
from channels.whatsapp_cloud_payload import Ignored
from gateway.customers.evidence import SenderClaim, observe_claim, whatsapp_sender
from identity import DEFAULT_BLOCKED
from outbound import FetchKind, FetchPolicy, SafeFetcher
from tests.support.fixtures import FIXTURES
from tests.support.graph_server import ACCESS_TOKEN, PHONE_NUMBER_ID, LocalGraph

CLOUD = FIXTURES / "whatsapp_cloud"
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SECRET = "app-secret-for-tests"
VERIFY = "verify-token-for-tests"
BASE = "https://graph.example.test/v21.0"
# The client of the adapters that only verify and parse (never used, so never opened).
UNUSED_HTTP = httpx.AsyncClient()


def _cases(name: str) -> dict[str, dict[str, Any]]:
    cases: dict[str, dict[str, Any]] = json.loads((CLOUD / f"{name}.json").read_text())
    return cases


def channel(
    *,
    secret: str | None = SECRET,
    verify: str | None = VERIFY,
    base: str = BASE,
    http: httpx.AsyncClient | None = None,
    fetcher: SafeFetcher | None = None,
    phone_number_id: str | None = None,
    token: str | None = ACCESS_TOKEN,
    attempts: int = 3,
) -> WhatsAppCloudChannel:
    return WhatsAppCloudChannel(
        api_base=base,
        verify_token=verify,
        app_secret=secret,
        access_token=token,
        phone_number_id=phone_number_id,
        http=http or UNUSED_HTTP,
        fetcher=fetcher,
        clock=lambda: NOW,
        attempts=attempts,
        base_delay_s=0.01,
    )


def signed(body: bytes, secret: str = SECRET) -> RawRequest:
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return RawRequest(
        "POST",
        "https://relay.example.org/webhooks/whatsapp/cloud",
        {"Content-Type": "application/json", SIGNATURE_HEADER: signature},
        body,
    )


def body_of(case: dict[str, Any]) -> bytes:
    return json.dumps(case).encode()


# Every recorded case: (kind, text) of the message it becomes, or the reason it is ignored.
MESSAGES: dict[str, tuple[str, str] | str] = {
    "text": ("text", "Body Text"),
    "image": ("image", "[image]"),
    "media_with_url": ("image", "[image]"),
    "video": ("video", "[video: caption]"),
    "document": ("document", "[document: caption]"),
    "audio": ("voice", "[voice note, not transcribed]"),
    "voice": ("voice", "[voice note, not transcribed]"),
    "static_sticker": ("sticker", "[sticker]"),
    "animated_sticker": ("sticker", "[sticker]"),
    "reaction": "a reaction is not a question",
    "unreaction_empty": "a reaction is not a question",
    "unreaction_no_emoji": "a reaction is not a question",
    "current_location": ("location", "[location] (12.25089, 43.90539)"),
    "chosen_location": (
        "location",
        "[location] Facebook HQ, 1 Hacker Way, Menlo Park, CA 94025 (37.4611978, -122.2164385)",
    ),
    "contacts": (
        "contact",
        "[contact] Chandler Bing +1 555-555-5555; [contact] Monica +1 666-666-6666; "
        "[contact] Rachel Green +1 777-777-7777",
    ),
    "order": ("text", "[order] 3 × HAMBURGER, 2 × FRENCH_FRIES, 2 × SODA"),
    "unsupported": "does not deliver (131051)",
    "unsupported_with_type": "does not deliver (131051)",
    "reply": ("text", "replied text"),
    "forwarded": ("text", "forwarded text"),
    "forwarded_many_times": ("text", "text forwarded many times"),
    "interactive_message_with_err": "no reply Meta could read",
    "referral": ("text", "BODY"),
}
OTHERS: dict[tuple[str, str], tuple[str, str] | str] = {
    ("pywa_callback_button", "button"): ("button", "title"),
    ("pywa_callback_button", "quick_reply"): ("button", "title"),
    ("pywa_callback_button", "quick_reply_without_context"): ("button", "title"),
    ("pywa_edited_message", "image"): ("edit", "[image: Updated image caption]"),
    ("pywa_deleted_message", "revoke"): "deleted by the customer",
    ("pywa_system", "phone_number_change"): "system notice (user_changed_number)",
    ("pywa_system", "identity_change"): "system notice (customer_identity_changed)",
}
EXPECTED = {("pywa_message", case): outcome for case, outcome in MESSAGES.items()} | OTHERS


def test_every_recorded_message_case_has_an_expected_outcome() -> None:
    recorded = {
        (path.stem, case)
        for path in CLOUD.glob("*.json")
        if path.stem != "pywa_message_status"
        for case in _cases(path.stem)
    }
    assert recorded == set(EXPECTED)


@pytest.mark.parametrize(("file", "case"), sorted(EXPECTED))
def test_each_recorded_case_is_a_typed_message_or_ignored_on_purpose(file: str, case: str) -> None:
    notification = channel().parse(signed(body_of(_cases(file)[case])))
    expected = EXPECTED[(file, case)]
    assert notification.statuses == ()
    if isinstance(expected, str):
        assert notification.messages == ()
        ignored = notification.ignored[-1]  # after the change's own errors, if any
        assert isinstance(ignored, Ignored) and expected in ignored.reason
        return
    [message] = notification.messages
    assert notification.ignored == ()
    assert (message.kind, message.text) == expected
    assert message.channel == "whatsapp_cloud"
    assert message.sender.startswith("whatsapp:+") and message.sender[10:].isdigit()
    assert message.received_at == NOW


def test_a_text_keeps_its_wamid_sender_and_profile_name() -> None:
    [message] = channel().parse(signed(body_of(_cases("pywa_message")["text"]))).messages
    assert message.provider_message_id == "wamid.xyzxyz"
    assert message.sender == "whatsapp:+972987654321"
    assert message.sender_name == "Test Name"
    assert message.extra["message_key"] == "wamid.xyzxyz"
    assert message.extra["phone_number_id"] == "1122334455667"
    assert message.extra["timestamp"] == "1697043223"


def test_a_reply_names_the_message_it_answers() -> None:
    [message] = channel().parse(signed(body_of(_cases("pywa_message")["reply"]))).messages
    assert message.reply_to_provider_id == "wamid.xyzxyz=="
    [button] = channel().parse(signed(body_of(_cases("pywa_callback_button")["button"]))).messages
    assert button.reply_to_provider_id == "wamid.xyzxyz"
    assert button.extra["button_payload"] == "callback_data"


def test_attachments_keep_their_media_id_type_caption_and_file_name() -> None:
    [document] = channel().parse(signed(body_of(_cases("pywa_message")["document"]))).messages
    [media] = document.media
    assert media.media_id == "1234567890987654321"
    assert media.url == f"{BASE}/1234567890987654321"  # the media object, fetched with the token
    assert (media.content_type, media.caption, media.filename) == (
        "application/pdf",
        "caption",
        "filename.pdf",
    )
    assert document.extra["forwarded"] == "once"


def test_a_voice_note_is_a_voice_message_with_its_audio() -> None:
    [voice] = channel().parse(signed(body_of(_cases("pywa_message")["voice"]))).messages
    assert voice.kind == "voice" and voice.extra["voice"] == "true"
    [audio] = voice.media
    assert (
        audio.content_type == "audio/ogg; codecs=opus" and audio.media_id == "1234567890987654321"
    )


def test_an_edit_is_a_new_version_of_the_original_message() -> None:
    [edit] = channel().parse(signed(body_of(_cases("pywa_edited_message")["image"]))).messages
    original = "wamid.HBgLMTQxMjU1NTA4MjkVAgASGBQzQUNCNjk5RDUwNUZGMUZEM0VBRAA="
    assert edit.kind == "edit" and edit.edit_of == original
    assert edit.extra["message_key"] == original  # the key the original was stored under
    assert edit.provider_message_id != original
    assert [m.caption for m in edit.media] == ["Updated image caption"]


def test_statuses_are_read_with_their_error_codes() -> None:
    cases = _cases("pywa_message_status")
    read = {
        case: tuple(
            (s.provider_message_id, s.status, s.error_code)
            for s in channel().parse(signed(body_of(body))).statuses
        )
        for case, body in cases.items()
    }
    assert read["sent"] == (("wamid.xyzxyz", "sent", None),)
    assert read["delivered"] == (("wamid.xyzxyz", "delivered", None),)
    assert read["read"] == (("wamid.xyzxyz", "read", None),)
    assert read["played"] == (("wamid.xyzxyz", "read", None),)  # heard: past read
    assert read["failed"] == (("wamid.xyzxyz", "failed", "130472"),)
    assert read["with_tracker"] == (("wamid.xyzxyz", "sent", None),)
    assert read["group"] == (("<WHATSAPP_MESSAGE_ID>", "read", None),)
    assert all(channel().parse(signed(body_of(body))).messages == () for body in cases.values())


def test_a_status_names_the_reply_it_was_sent_for_when_the_tracker_is_ours() -> None:
    body = _cases("pywa_message_status")["with_tracker"]
    [status] = body["entry"][0]["changes"][0]["value"]["statuses"]
    assert status["biz_opaque_callback_data"] == "some data"  # not ours: no reference
    [read] = channel().parse(signed(body_of(body))).statuses
    assert read.reference is None
    status["biz_opaque_callback_data"] = "41.97.1"
    [read] = channel().parse(signed(body_of(body))).statuses
    assert (read.reference, read.part) == (SendReference(turn_id=41, reply_id=97), 1)
    status["biz_opaque_callback_data"] = {"not": "a string"}
    [read] = channel().parse(signed(body_of(body))).statuses
    assert read.status == "sent" and read.reference is None


def _batch() -> dict[str, Any]:
    """Two entries, three changes: messages of two senders, a repeat, statuses, another field."""
    text = _cases("pywa_message")["text"]
    image = _cases("pywa_message")["image"]
    status = _cases("pywa_message_status")
    first = json.loads(json.dumps(text["entry"][0]))
    value = first["changes"][0]["value"]
    value["messages"].append({**value["messages"][0], "id": "wamid.second"})
    value["messages"].append(value["messages"][0])  # the same wamid twice
    value["statuses"] = status["delivered"]["entry"][0]["changes"][0]["value"]["statuses"]
    second = json.loads(json.dumps(image["entry"][0]))
    other = second["changes"][0]["value"]
    other["contacts"][0]["wa_id"] = "5511999990000"
    other["messages"][0].update({"from": "5511999990000", "id": "wamid.third"})
    second["changes"].append(status["failed"]["entry"][0]["changes"][0])
    second["changes"].append({"field": "account_update", "value": {"event": "VERIFIED_ACCOUNT"}})
    return {"object": "whatsapp_business_account", "entry": [first, second]}


def test_a_batch_gives_each_message_once_in_order_with_every_status() -> None:
    notification = channel().parse(signed(json.dumps(_batch()).encode()))
    assert [(m.provider_message_id, m.sender, m.kind) for m in notification.messages] == [
        ("wamid.xyzxyz", "whatsapp:+972987654321", "text"),
        ("wamid.second", "whatsapp:+972987654321", "text"),
        ("wamid.third", "whatsapp:+5511999990000", "image"),
    ]
    assert [(s.status, s.error_code) for s in notification.statuses] == [
        ("delivered", None),
        ("failed", "130472"),
    ]
    assert [i.what for i in notification.ignored] == ["field 'account_update'"]


def test_changes_for_another_business_number_are_ignored() -> None:
    body = body_of(_cases("pywa_message")["text"])
    assert channel(phone_number_id="1122334455667").parse(signed(body)).messages != ()
    other = channel(phone_number_id="999").parse(signed(body))
    assert other.messages == () and "another business number" in other.ignored[0].reason


def test_a_sender_without_a_phone_number_is_ignored() -> None:
    case = json.loads(json.dumps(_cases("pywa_message")["text"]))
    message = case["entry"][0]["changes"][0]["value"]["messages"][0]
    del message["from"]
    message["from_user_id"] = "US.13491208655302741918"
    notification = channel().parse(signed(body_of(case)))
    assert notification.messages == () and "no phone number" in notification.ignored[0].reason


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"object": "whatsapp_business_account", "entry": {}}', "entry must be a list"),
        (
            b'{"object": "whatsapp_business_account", "entry": [{"changes": [{"field": '
            b'"messages", "value": {"messages": [{"type": "text", "text": {"body": "x"}}]}}]}]}',
            "id must be a non-empty string",
        ),
        (
            b'{"object": "whatsapp_business_account", "entry": [{"changes": [{"field": '
            b'"messages", "value": {"statuses": [{"id": "wamid.1"}]}}]}]}',
            "status must be a non-empty string",
        ),
    ],
)
def test_a_malformed_body_is_refused_with_the_reason(body: bytes, reason: str) -> None:
    with pytest.raises(PayloadInvalid, match=reason):
        channel().parse(signed(body))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=15,
)
MESSAGE_KEYS = (
    "id from type text image audio location contacts button interactive order edit context "
    "referral timestamp system"
).split()
TYPES = st.sampled_from(
    ["text", "image", "audio", "location", "contacts", "button", "interactive", "order", "edit"]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    message=st.dictionaries(st.sampled_from(MESSAGE_KEYS), json_values, max_size=6),
    kind=TYPES,
    status=st.dictionaries(st.sampled_from(["id", "status", "errors"]), json_values, max_size=3),
    contacts=json_values,
)
def test_any_body_is_read_or_refused_with_a_reason(
    message: dict[str, Any], kind: str, status: dict[str, Any], contacts: Any
) -> None:
    message = {"type": kind, "id": "wamid.f", "from": "5511999990000", **message}
    value = {"messages": [message], "statuses": [status], "contacts": contacts}
    change = {"field": "messages", "value": value}
    body = {"object": "whatsapp_business_account", "entry": [{"changes": [change]}]}
    try:
        notification = channel().parse(signed(json.dumps(body).encode()))
    except PayloadInvalid:
        return
    for read in notification.messages:
        assert read.sender == "whatsapp:+" + str(message["from"]).lstrip("+")
        assert isinstance(read.text, str)


# Signatures and the subscription check


def test_the_signature_is_the_hmac_of_the_raw_body() -> None:
    body = body_of(_cases("pywa_message")["text"])
    channel().verify(signed(body))
    mutated = signed(body)
    with pytest.raises(SignatureInvalid, match="does not match"):
        channel().verify(RawRequest("POST", mutated.url, mutated.headers, body + b" "))
    with pytest.raises(SignatureInvalid, match="does not match"):
        channel().verify(signed(body, secret="another-secret"))
    with pytest.raises(SignatureInvalid, match="missing"):
        channel().verify(RawRequest("POST", mutated.url, {}, body))
    with pytest.raises(SignatureInvalid, match="not configured"):
        channel(secret=None).verify(signed(body))


def test_the_subscription_check_answers_the_challenge_for_our_token_only() -> None:
    query = {"hub.mode": "subscribe", "hub.verify_token": VERIFY, "hub.challenge": "1158201444"}
    assert channel().subscription_challenge(query) == "1158201444"
    for wrong in (
        {**query, "hub.verify_token": "guess"},
        {k: v for k, v in query.items() if k != "hub.verify_token"},
        {**query, "hub.mode": "unsubscribe"},
    ):
        with pytest.raises(SignatureInvalid) as refused:
            channel().subscription_challenge(wrong)
        assert refused.value.status == 403
    with pytest.raises(SignatureInvalid, match="not configured"):
        channel(verify=None).subscription_challenge(query)


def test_a_cloud_sender_is_the_same_identity_as_a_twilio_sender() -> None:
    case = json.loads(json.dumps(_cases("pywa_message")["text"]))
    value = case["entry"][0]["changes"][0]["value"]
    value["messages"][0]["from"] = value["contacts"][0]["wa_id"] = "5511999990000"
    [cloud] = channel().parse(signed(body_of(case))).messages

    def key(channel_name: str, sender: str) -> str:
        observation = observe_claim(
            whatsapp_sender,
            SenderClaim(channel=channel_name, sender=sender),
            text="",
            webchat_secret=None,
            region="BR",
            blocked=DEFAULT_BLOCKED,
        )
        return str(observation.key)

    assert key("whatsapp_cloud", cloud.sender) == key("whatsapp", "whatsapp:+5511999990000")
    assert key("whatsapp_cloud", cloud.sender) == "whatsapp:+5511999990000"


# Sending through the Graph API


Graph = tuple[LocalGraph, str, httpx.AsyncClient, SafeFetcher]


@pytest.fixture
async def graph() -> AsyncIterator[Graph]:
    """The local Graph API, its base, the Graph client and a fetcher that may reach it (on
    loopback, as a deployment's own host listed in RELAYDESK_FETCH_ALLOW)."""
    server = LocalGraph()
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]))
    async with server.serving() as base, httpx.AsyncClient() as http:
        yield server, base, http, fetcher
    await fetcher.aclose()


def _sender(graph: Graph, **more: Any) -> WhatsAppCloudChannel:
    _, base, http, fetcher = graph
    return channel(base=base, http=http, fetcher=fetcher, phone_number_id=PHONE_NUMBER_ID, **more)


def _reply(text: str = "Seu pedido saiu.", **more: Any) -> OutboundMessage:
    return OutboundMessage(
        channel="whatsapp_cloud",
        recipient="whatsapp:+5511999990000",
        text=text,
        reply_to="wamid.customer1",
        **more,
    )


async def test_a_text_reply_is_posted_with_the_token_and_quotes_the_customer(graph) -> None:  # type: ignore[no-untyped-def]
    server, *_ = graph
    result = await _sender(graph).send(_reply())
    [request] = server.accepted
    assert request.path == f"/v21.0/{PHONE_NUMBER_ID}/messages"
    assert request.headers["Authorization"] == f"Bearer {ACCESS_TOKEN}"
    assert request.json == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "5511999990000",
        "context": {"message_id": "wamid.customer1"},
        "type": "text",
        "text": {"body": "Seu pedido saiu."},
    }
    assert len(result.provider_message_ids) == 1
    assert result.provider_message_ids[0].startswith("wamid.")


async def test_a_long_reply_is_split_in_order_and_only_the_first_part_quotes(graph) -> None:  # type: ignore[no-untyped-def]
    server, *_ = graph
    words = " ".join(f"w{i:04d}" for i in range(2000))  # ~12,000 characters
    result = await _sender(graph).send(_reply(words))
    bodies = [sent["text"]["body"] for sent in server.sent()]
    assert len(bodies) == len(result.provider_message_ids) >= 3
    assert all(len(body) <= MAX_TEXT_CHARS for body in bodies)
    assert " ".join(bodies).split() == words.split()
    assert ["context" in sent for sent in server.sent()] == [True] + [False] * (len(bodies) - 1)


async def test_a_reply_to_something_that_is_not_a_wamid_quotes_nothing(graph) -> None:  # type: ignore[no-untyped-def]
    server, *_ = graph
    await _sender(graph).send(
        OutboundMessage("whatsapp_cloud", "whatsapp:+5511999990000", "oi", reply_to=None)
    )
    assert "context" not in server.sent()[0]


async def test_a_template_is_sent_with_its_variables_in_key_order(graph) -> None:  # type: ignore[no-untyped-def]
    server, *_ = graph
    template = Template(
        name="pedido_atualizado",
        language="pt_BR",
        variables={"2": "4471-XB", "10": "décimo", "1": "Ana"},
    )
    await _sender(graph).send(_reply("Olá Ana, o pedido 4471-XB…", template=template))
    [sent] = server.sent()
    assert sent["type"] == "template" and "text" not in sent
    assert sent["template"] == {
        "name": "pedido_atualizado",
        "language": {"code": "pt_BR"},
        "components": [
            {
                "type": "body",
                "parameters": [
                    {"type": "text", "text": "Ana"},
                    {"type": "text", "text": "4471-XB"},
                    {"type": "text", "text": "décimo"},
                ],
            }
        ],
    }


async def test_attachments_are_uploaded_then_sent_by_media_id(graph) -> None:  # type: ignore[no-untyped-def]
    server, *_ = graph
    picture = server.serve_file("boleto.png", b"\x89PNG-bytes", "image/png")
    document = server.serve_file("nota.pdf", b"%PDF-1.7 bytes", "application/pdf")
    media = (Media(picture, caption="Seu boleto"), Media(document, caption="Nota fiscal"))
    result = await _sender(graph).send(_reply("Segue:", media=media))
    uploads = server.uploads()
    assert [u.form for u in uploads] == [
        {"messaging_product": "whatsapp", "type": "image/png"},
        {"messaging_product": "whatsapp", "type": "application/pdf"},
    ]
    assert [(u.files["file"].filename, u.files["file"].data) for u in uploads] == [
        ("boleto.png", b"\x89PNG-bytes"),
        ("nota.pdf", b"%PDF-1.7 bytes"),
    ]
    assert all(u.headers["Authorization"] == f"Bearer {ACCESS_TOKEN}" for u in uploads)
    text, image, pdf = server.sent()
    assert text["text"] == {"body": "Segue:"} and "context" in text
    assert image["type"] == "image" and "context" not in image
    assert image["image"]["caption"] == "Seu boleto"
    assert server.media[image["image"]["id"]] == (b"\x89PNG-bytes", "image/png")
    assert pdf["document"]["filename"] == "nota.pdf"
    assert server.media[pdf["document"]["id"]][0] == b"%PDF-1.7 bytes"
    assert len(result.provider_message_ids) == 3


async def test_outside_the_window_is_code_131047_and_not_retried(graph) -> None:  # type: ignore[no-untyped-def]
    server, *_ = graph
    server.fail_next(131047, "Re-engagement message", subcode=2494010)
    with pytest.raises(SendFailed) as failed:
        await _sender(graph).send(_reply())
    assert failed.value.code == "131047" and failed.value.retryable is False
    assert "Re-engagement message" in str(failed.value)
    assert len(server.requests) == 1


async def test_throttling_and_server_errors_are_retried(graph) -> None:  # type: ignore[no-untyped-def]
    server, *_ = graph
    server.fail_next(130429, "Rate limit hit", status=400)
    server.fail_next(2, "Service temporarily unavailable", status=503)
    result = await _sender(graph).send(_reply())
    assert len(server.requests) == 3 and len(result.provider_message_ids) == 1


async def test_errors_that_last_end_retryable_after_the_attempts(graph) -> None:  # type: ignore[no-untyped-def]
    server, *_ = graph
    for _ in range(3):
        server.fail_next(131000, "Something went wrong", status=500)
    with pytest.raises(SendFailed) as failed:
        await _sender(graph, attempts=3).send(_reply())
    assert failed.value.retryable is True and failed.value.code == "131000"
    assert server.accepted == [] and len(server.requests) == 3


async def test_a_wrong_token_is_refused_without_retry(graph) -> None:  # type: ignore[no-untyped-def]
    server, *_ = graph
    with pytest.raises(SendFailed) as failed:
        await _sender(graph, token="wrong").send(_reply())
    assert failed.value.code == "190" and failed.value.retryable is False
    assert len(server.requests) == 1


async def test_an_unconfigured_channel_sends_nothing(graph) -> None:  # type: ignore[no-untyped-def]
    server, *_ = graph
    with pytest.raises(SendFailed, match="not configured") as failed:
        await _sender(graph, token=None).send(_reply())
    assert failed.value.retryable is False and server.requests == []


async def test_typing_marks_the_message_read_with_the_indicator_in_one_attempt(graph) -> None:  # type: ignore[no-untyped-def]
    server, *_ = graph
    cloud = _sender(graph)
    assert isinstance(cloud, TypingSignals) and isinstance(cloud, MediaFetch)
    await cloud.typing("whatsapp:+5511999990000", "wamid.customer1")
    assert server.typing() == [
        {
            "messaging_product": "whatsapp",
            "status": "read",
            "message_id": "wamid.customer1",
            "typing_indicator": {"type": "text"},
        }
    ]
    await cloud.typing("whatsapp:+5511999990000", "transcript:12")  # not a wamid: nothing
    await cloud.typing("whatsapp:+5511999990000", None)
    assert len(server.requests) == 1
    server.fail_next(131000, "Something went wrong", status=500, kind="typing")
    with pytest.raises(SendFailed):
        await cloud.typing("whatsapp:+5511999990000", "wamid.customer2")
    assert len(server.typing()) == 2  # no retry inside


async def test_received_media_is_fetched_through_its_media_object(graph) -> None:  # type: ignore[no-untyped-def]
    server, base, *_ = graph
    server.media["1234567890987654321"] = (b"OggS-opus", "audio/ogg; codecs=opus")
    voice = _cases("pywa_message")["voice"]
    [message] = channel(base=base).parse(signed(body_of(voice))).messages  # any business number
    # As the voice note step hands it over: the stored URL and type, not the media id.
    stored = Media(message.media[0].url, message.media[0].content_type)
    data, content_type = await _sender(graph).fetch_media(stored, FetchKind.AUDIO)
    assert (data, content_type) == (b"OggS-opus", "audio/ogg; codecs=opus")
    paths = [r.path for r in server.requests]
    assert paths == ["/v21.0/1234567890987654321", "/download/1234567890987654321"]
    assert all(r.headers["Authorization"] == f"Bearer {ACCESS_TOKEN}" for r in server.requests)
    with pytest.raises(SendFailed):
        await _sender(graph).fetch_media(Media(f"{base}/999"), FetchKind.AUDIO)  # unknown: 404

"""Telegram updates to typed messages: every recorded update in the shared fixtures, the
cases they do not cover, and bodies that are not updates."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.base import InboundMessage, Media, PayloadInvalid, RawRequest
from channels.telegram import TelegramChannel
from channels.telegram_updates import (
    CONTACT_PLACEHOLDER,
    VOICE_PLACEHOLDER,
    Ignored,
    read_update,
    webhook_answer,
    with_old_schema_defaults,
)
from tests.support.fixtures import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "telegram"
NOW = datetime(2026, 11, 29, tzinfo=UTC)


def parse(update: bytes | dict[str, Any]) -> tuple[InboundMessage, ...]:
    """Through the channel, as the webhook does once the secret has been checked."""
    body = update if isinstance(update, bytes) else json.dumps(update).encode()
    channel = TelegramChannel(token=None, webhook_secret=None, api_base=None, clock=lambda: NOW)
    return channel.parse(RawRequest("POST", "/webhooks/telegram", {}, body)).messages


def fixture_entries() -> Iterator[tuple[str, dict[str, Any]]]:
    """Each update in the folder: a file holding one update, or each entry of a named set."""
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text())
        if "update_id" in data:
            yield path.name, data
        else:
            for key, update in data.items():
                yield f"{path.name}:{key}", update


def fixture(entry: str) -> dict[str, Any]:
    return dict(fixture_entries())[entry]


# What each recorded update must become. The old-schema documentation examples all share
# update_id 10000 (they are not a dedupe test) and parse through the old-schema defaults.
DOC_USER = {"sender": "1111111", "sender_name": "Test Firstname Test Lastname"}
DOC_KEY = "1111111:1365"
DOC_FILE = "telegram:file:AwADBAADbXXXXXXXXXXXGBdhD2l6_XX"
DOC_CALLBACK = {
    **DOC_USER,
    "kind": "button",
    "text": "Data from button callback",
    "extra": {"update_type": "callback_query", "inline_message_id": "1234csdbsk4839"},
}
HA_USER = {"sender": "12345678", "sender_name": "Test Firstname Test Lastname"}
HA_FILE = (
    "telegram:file:AgACAgUAAxkBAAIBUWJ5aXl6Y3h5bXl6Y3h5bXl6Y3gAAJxvMRtP7nG4Fq7m0m0vBAAMCAAN5AAMjBA"
)
DOC_START = {**DOC_USER, "kind": "text", "text": "/start", "extra": {"message_key": DOC_KEY}}

PARSED: dict[str, dict[str, Any]] = {
    "docs_callback_query.json": DOC_CALLBACK,
    "docs_edited_message.json": {
        **DOC_USER,
        "kind": "edit",
        "text": "Edited text",
        "edit_of": DOC_KEY,
        "extra": {"update_type": "edited_message", "message_key": DOC_KEY},
    },
    # The first variant's chat has no `type`: a positive chat id is a private chat.
    "docs_example_updates.json:message_with_text_curl_basic": {
        **DOC_START,
        "sender_name": "Test Test Lastname",
    },
    "docs_example_updates.json:message_with_text": DOC_START,
    # Forwarded text counts as the forwarder's own message; `forward_from` is not an identity.
    "docs_example_updates.json:forwarded_message": DOC_START,
    "docs_example_updates.json:forwarded_channel_message": DOC_START,
    "docs_example_updates.json:message_with_reply": DOC_START,
    "docs_example_updates.json:edited_message": {
        **DOC_USER,
        "kind": "edit",
        "text": "Edited text",
        "edit_of": DOC_KEY,
    },
    "docs_example_updates.json:message_with_entities": {
        **DOC_USER,
        "kind": "text",
        "text": "Bold and italics",
    },
    "docs_example_updates.json:message_with_audio": {
        **DOC_USER,
        "kind": "voice",
        "text": VOICE_PLACEHOLDER,
        "media": (Media(DOC_FILE, "audio/mpeg"),),
    },
    "docs_example_updates.json:voice_message": {
        **DOC_USER,
        "kind": "voice",
        "text": VOICE_PLACEHOLDER,
        "media": (Media(DOC_FILE, "audio/ogg"),),
    },
    "docs_example_updates.json:message_with_document": {
        **DOC_USER,
        "kind": "media",
        "text": "[document Testfile.pdf]",
        "media": (Media(DOC_FILE, "application/pdf"),),
    },
    "docs_example_updates.json:callback_query": DOC_CALLBACK,
    "docs_text_message.json": DOC_START,
    "docs_voice_message.json": {
        **DOC_USER,
        "kind": "voice",
        "text": VOICE_PLACEHOLDER,
        "media": (Media(DOC_FILE, "audio/ogg"),),
        "extra": {"chat_id": "1111111", "message_id": "1365", "update_id": "10000"},
    },
    "ha_conftest_updates.json:update_message_text": {
        **HA_USER,
        "provider_message_id": "1",
        "kind": "text",
        "text": "HELLO",
        # A synthetic fixture: chat id and sender differ; replies go to the sender.
        "extra": {"chat_id": "1111111", "message_key": "1111111:1"},
    },
    "ha_conftest_updates.json:update_callback_query": {
        **HA_USER,
        "kind": "button",
        "text": "Data from button callback",
    },
    "ha_update_message_attachment_document.json": {
        **HA_USER,
        "provider_message_id": "2",
        "kind": "media",
        "text": "[document]",
        "media": (Media(HA_FILE, "application/pdf"),),
    },
    "ha_update_message_attachment_photo.json": {
        **HA_USER,
        "kind": "media",
        "text": "[photo]",
        "media": (Media(HA_FILE, "image/jpeg"),),
    },
    "teloxide_captured_updates.json:message": {
        "provider_message_id": "892252934",
        "sender": "218485655",
        "sender_name": "Waffle",
        "kind": "text",
        "text": "hello there",
        "extra": {
            "update_id": "892252934",
            "update_type": "message",
            "chat_id": "218485655",
            "message_id": "6557",
            "message_key": "218485655:6557",
        },
    },
    "teloxide_captured_updates.json:de_private_chat_text_message": {
        "provider_message_id": "306197398",
        "sender": "408258968",
        "sender_name": "Hirrolot",
        "kind": "text",
        "text": "4",
    },
}

IGNORED: dict[str, tuple[str, str]] = {
    # Group and supergroup traffic: answering it in the sender's private chat (with what is
    # known about the customer) is not a conversation the user opened with the bot.
    "ha_conftest_updates.json:update_message_command": ("message", "group chat"),
    "teloxide_captured_updates.json:issue_1107_0": ("message", "supergroup chat"),
    "teloxide_captured_updates.json:issue_1107_1": ("message", "supergroup chat"),
    "teloxide_captured_updates.json:pinned_message_works": ("message", "supergroup chat"),
    "teloxide_captured_updates.json:dice_works": ("message", "supergroup chat"),
    # Update kinds that carry no customer message; setWebhook does not even ask for them.
    "docs_example_updates.json:inline_query": ("inline_query", "update kind not handled"),
    "docs_example_updates.json:chosen_inline_result": (
        "chosen_inline_result",
        "update kind not handled",
    ),
    "teloxide_captured_updates.json:issue_523": ("my_chat_member", "update kind not handled"),
    "teloxide_captured_updates.json:message_reaction_updated_0": (
        "message_reaction",
        "update kind not handled",
    ),
    "teloxide_captured_updates.json:message_reaction_updated_1": (
        "message_reaction",
        "update kind not handled",
    ),
    "teloxide_captured_updates.json:message_reaction_count_updated": (
        "message_reaction_count",
        "update kind not handled",
    ),
    "teloxide_captured_updates.json:chat_boost_updated": ("chat_boost", "update kind not handled"),
    "teloxide_captured_updates.json:chat_boost_removed": (
        "removed_chat_boost",
        "update kind not handled",
    ),
    "teloxide_captured_updates.json:paid_media_purchased_de": (
        "purchased_paid_media",
        "update kind not handled",
    ),
    # An update kind newer than this code: acknowledged, not an error.
    "teloxide_captured_updates.json:new_update_kind_error": (
        "new_update_kind",
        "update kind not handled",
    ),
}


def test_every_fixture_is_either_parsed_or_deliberately_ignored() -> None:
    entries = {name for name, _ in fixture_entries()}
    assert len(entries) == 36
    assert entries == set(PARSED) | set(IGNORED)
    assert not set(PARSED) & set(IGNORED)


@pytest.mark.parametrize("entry", sorted(PARSED))
def test_fixture_parses_into_the_right_message(entry: str) -> None:
    update = fixture(entry)
    (message,) = parse(update)
    assert isinstance(message, InboundMessage)
    expected = dict(PARSED[entry])
    expected.setdefault("provider_message_id", str(update["update_id"]))
    extra = expected.pop("extra", {})
    for name, value in expected.items():
        assert getattr(message, name) == value, name
    assert {k: message.extra[k] for k in extra} == extra
    assert message.channel == "telegram" and message.received_at == NOW
    assert message.sender.isdigit()  # the identity rules need the numeric user id
    assert message.extra["update_id"] == str(update["update_id"])
    assert all(isinstance(value, str) for value in message.extra.values())


@pytest.mark.parametrize("entry", sorted(IGNORED))
def test_fixture_is_acknowledged_without_a_message(entry: str) -> None:
    assert parse(fixture(entry)) == ()
    result = read_update(json.dumps(fixture(entry)).encode(), NOW)
    assert isinstance(result, Ignored)
    update_type, reason = IGNORED[entry]
    assert result.update_type == update_type
    assert reason in result.reason


def test_the_old_schema_defaults_leave_current_updates_as_sent() -> None:
    """They only fill what is absent, so a current update is read as Telegram sent it."""
    for name, update in fixture_entries():
        if not name.startswith("docs_"):
            assert with_old_schema_defaults(update) == update, name
    old = fixture("docs_callback_query.json")
    filled = with_old_schema_defaults(old)
    assert filled["callback_query"]["from"]["is_bot"] is False
    assert filled["callback_query"]["chat_instance"] == ""
    assert "is_bot" not in old["callback_query"]["from"]  # a copy: the input is untouched


def test_a_tap_is_answered_in_the_webhook_reply_and_anything_else_acknowledged() -> None:
    """`answerCallbackQuery` with the tap's own id (Telegram runs a method given in a
    webhook's reply); a message, or nothing stored, gets `{"ok": true}`."""
    update = with_old_schema_defaults(fixture("docs_callback_query.json"))
    tapped = parse(update)
    assert webhook_answer(tapped) == {
        "method": "answerCallbackQuery",
        "callback_query_id": str(update["callback_query"]["id"]),
    }
    assert webhook_answer(parse(private_message(text="Oi"))) == {"ok": True}
    assert webhook_answer(()) == {"ok": True}


# Synthetic updates in the current schema for what the fixtures do not cover.


def private_message(**content: Any) -> dict[str, Any]:
    user = {"id": 555001, "is_bot": False, "first_name": "Ana", "last_name": "Souza"}
    return {
        "update_id": 700001,
        "message": {
            "message_id": 42,
            "date": 1764400000,
            "from": user,
            "chat": {"id": 555001, "type": "private", "first_name": "Ana"},
            **content,
        },
    }


def test_a_contact_share_of_the_senders_own_number() -> None:
    update = private_message(
        contact={"phone_number": "5511998765432", "first_name": "Ana", "user_id": 555001}
    )
    (message,) = parse(update)
    assert (message.kind, message.text) == ("contact", CONTACT_PLACEHOLDER)
    assert (message.contact_phone, message.contact_user_id) == ("5511998765432", 555001)
    assert message.sender == "555001"


def test_a_contact_of_someone_else_is_a_contact_without_its_number_in_the_text() -> None:
    update = private_message(contact={"phone_number": "+5511911112222", "first_name": "Bia"})
    (message,) = parse(update)
    assert message.kind == "contact" and message.contact_user_id is None
    assert "5511911112222" not in message.text  # never an asserted claim by the sender


def test_location_venue_sticker_video_and_caption() -> None:
    located = private_message(location={"latitude": -23.5614, "longitude": -46.6558})
    assert parse(located)[0].text == "[location] (-23.5614, -46.6558)"
    venue = private_message(
        location={"latitude": 1.5, "longitude": 2.5},
        venue={
            "location": {"latitude": 1.5, "longitude": 2.5},
            "title": "Loja Centro",
            "address": "Rua A, 10",
        },
    )
    (message,) = parse(venue)
    assert (message.kind, message.text) == (
        "location",
        "[location] Loja Centro, Rua A, 10 (1.5, 2.5)",
    )
    sticker = private_message(
        sticker={
            "file_id": "st1",
            "file_unique_id": "u1",
            "type": "regular",
            "width": 512,
            "height": 512,
            "is_animated": False,
            "is_video": False,
            "emoji": "👍",
        }
    )
    (message,) = parse(sticker)
    assert (message.kind, message.text) == ("media", "[sticker 👍]")
    assert message.media == (Media("telegram:file:st1", "image/webp"),)
    video = private_message(
        video={"file_id": "v1", "file_unique_id": "u2", "width": 1, "height": 1, "duration": 3},
        caption="olha o defeito",
    )
    (message,) = parse(video)
    assert (message.kind, message.text) == ("media", "olha o defeito")
    assert message.media == (Media("telegram:file:v1", "video/mp4"),)


def test_a_voice_note_keeps_its_caption_over_the_placeholder() -> None:
    update = private_message(
        voice={"file_id": "vo1", "file_unique_id": "u", "duration": 2}, caption="ouve isso"
    )
    (message,) = parse(update)
    assert (message.kind, message.text) == ("voice", "ouve isso")
    assert message.media == (Media("telegram:file:vo1", "audio/ogg"),)


IGNORED_SYNTHETIC: list[tuple[str, dict[str, Any], str]] = [
    (
        "a dice roll has nothing to answer",
        private_message(dice={"emoji": "🎲", "value": 3}),
        "content",
    ),
    (
        "a service message (pinned) has nothing to answer",
        private_message(
            pinned_message={"message_id": 1, "date": 0, "chat": {"id": 1, "type": "private"}}
        ),
        "content",
    ),
    (
        "messages from bots are not customers",
        {
            "update_id": 9,
            "message": {
                "message_id": 1,
                "date": 0,
                "from": {"id": 77, "is_bot": True, "first_name": "OtherBot"},
                "chat": {"id": 77, "type": "private"},
                "text": "hi",
            },
        },
        "bot",
    ),
    (
        "a live location streams as edits without text",
        {
            "update_id": 10,
            "edited_message": {
                "message_id": 5,
                "date": 0,
                "edit_date": 1,
                "from": {"id": 8, "is_bot": False, "first_name": "A"},
                "chat": {"id": 8, "type": "private"},
                "location": {"latitude": 1.0, "longitude": 2.0, "live_period": 60},
            },
        },
        "edit without text",
    ),
    (
        "channel posts have no user sender",
        {
            "update_id": 11,
            "channel_post": {
                "message_id": 1,
                "date": 0,
                "chat": {"id": -1001, "type": "channel", "title": "News"},
                "text": "announcement",
            },
        },
        "update kind not handled",
    ),
    (
        "a button on a group message is group traffic",
        {
            "update_id": 12,
            "callback_query": {
                "id": "q",
                "chat_instance": "c",
                "data": "yes",
                "from": {"id": 8, "is_bot": False, "first_name": "A"},
                "message": {
                    "message_id": 3,
                    "date": 0,
                    "chat": {"id": -5, "type": "group", "title": "G"},
                    "text": "Confirm?",
                },
            },
        },
        "group chat",
    ),
    ("an update with nothing in it", {"update_id": 13}, "update kind not handled"),
]


@pytest.mark.parametrize(
    ("why", "update", "reason"), IGNORED_SYNTHETIC, ids=[case[0] for case in IGNORED_SYNTHETIC]
)
def test_deliberately_ignored(why: str, update: dict[str, Any], reason: str) -> None:
    assert parse(update) == (), why
    result = read_update(json.dumps(update).encode(), NOW)
    assert isinstance(result, Ignored) and reason in result.reason


def test_a_button_press_on_the_bots_private_message() -> None:
    update = {
        "update_id": 14,
        "callback_query": {
            "id": "q1",
            "chat_instance": "c",
            "data": "order:4471",
            "from": {"id": 8, "is_bot": False, "first_name": "Ana"},
            "message": {
                "message_id": 3,
                "date": 0,
                "chat": {"id": 8, "type": "private"},
                "text": "Which order?",
            },
        },
    }
    (message,) = parse(update)
    assert (message.kind, message.text, message.sender) == ("button", "order:4471", "8")
    assert message.extra["callback_query_id"] == "q1"
    assert (message.extra["chat_id"], message.extra["message_id"]) == ("8", "3")


def test_an_edited_caption_is_an_edit_of_the_original_message() -> None:
    update = private_message(
        photo=[{"file_id": "p", "file_unique_id": "u", "width": 1, "height": 1}],
        caption="agora com legenda",
        edit_date=1764400100,
    )
    update["edited_message"] = update.pop("message")
    (message,) = parse(update)
    assert (message.kind, message.text, message.edit_of) == (
        "edit",
        "agora com legenda",
        "555001:42",
    )


# Bodies that are not updates.


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"\xff\xfe",
        b"[]",
        b'"update"',
        b'{"message": {"text": "no update id"}}',
        b'{"update_id": "5"}',
        b'{"update_id": true}',
        b'{"update_id": -1}',
        b'{"update_id": 5, "message": "hello"}',
        b'{"update_id": 5, "message": {"message_id": 1}}',
        b'{"update_id": 5, "message": {"message_id": 1, "date": 1e300,'
        b' "chat": {"id": 1, "type": "private"}}}',
        b'{"update_id": 5, "message": {"message_id": 1, "date": 0, "text": "x",'
        b' "from": {"id": -3, "is_bot": false, "first_name": "A"},'
        b' "chat": {"id": 1, "type": "private"}}}',
        b'{"update_id": 5, "message": {"message_id": 1, "date": 0, "text": 42,'
        b' "from": {"id": 3, "is_bot": false, "first_name": "A"},'
        b' "chat": {"id": 3, "type": "private"}}}',
        b"[" * 100_000,
        b'{"update_id": ' + b"1" * 5000 + b"}",
        b'{"update_id": 5, "message": ' + b"[" * 990 + b"]" * 990 + b"}",
    ],
)
def test_a_body_that_is_not_an_update_is_payload_invalid(body: bytes) -> None:
    with pytest.raises(PayloadInvalid):
        parse(body)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["text", "from", "chat", "id", "type", "date", "message_id", "is_bot", "x"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(["message", "edited_message", "callback_query", "poll"]), value=JSON)
def test_any_json_is_a_message_nothing_or_payload_invalid(kind: str, value: Any) -> None:
    body = json.dumps({"update_id": 1, kind: value}).encode()
    try:
        result = parse(body)
    except PayloadInvalid:
        return
    assert all(isinstance(message, InboundMessage) for message in result)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield prefix + (key,)
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield prefix + (index,)
            yield from _paths(item, prefix + (index,))


RECORDED = [update for _, update in fixture_entries()]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_recorded_update_with_any_field_replaced_parses_or_is_payload_invalid(
    data: st.DataObject,
) -> None:
    update = copy.deepcopy(data.draw(st.sampled_from(RECORDED)))
    path = data.draw(st.sampled_from(list(_paths(update))))
    target = update
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = data.draw(JSON)
    try:
        result = parse(update)
    except PayloadInvalid:
        return
    assert all(isinstance(message, InboundMessage) for message in result)
    for message in result:
        assert isinstance(message.text, str) and message.sender.isdigit()

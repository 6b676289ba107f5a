from __future__ import annotations

import json
import logging

from gateway.runtime.logs import JsonFormatter, mask


def test_phone_numbers_and_emails_are_masked() -> None:
    assert mask("from whatsapp:+5511998765432 ok") == "from whatsapp:***5432 ok"
    assert mask("ligue (11) 99876-5432") == "ligue ***5432"
    assert mask("mail ana.souza@example.org") == "mail ***@example.org"


def test_addresses_times_and_ids_are_left_alone() -> None:
    for text in ("http://127.0.0.1:39263/x", "at 2026-11-29T12:19:39", "turn 4471", "v1.2.3"):
        assert mask(text) == text


def test_bodies_are_never_printed_above_debug() -> None:
    record = logging.LogRecord("t", logging.INFO, __file__, 1, "stored", None, None)
    record.fields = {"text": "meu cartão 4111 1111 1111 1111", "channel": "whatsapp"}
    line = json.loads(JsonFormatter().format(record))
    assert line["text"] == "<30 chars>"
    assert line["channel"] == "whatsapp"

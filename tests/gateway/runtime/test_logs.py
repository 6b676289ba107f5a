from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from gateway.runtime.logs import NOISY_LOGGERS, JsonFormatter, configure_logging, mask


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


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """configure_logging rewires the root logger; put it back for the tests that follow."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in NOISY_LOGGERS}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, was in levels.items():
        logging.getLogger(name).setLevel(was)


def emitted(level: str) -> list[str]:
    """Which loggers' INFO lines come out when logging is configured at `level`."""
    out = io.StringIO()
    configure_logging(level, stream=out)
    for name in ("twilio.http_client", "aiohttp.server", "relaydesk.turns", "context.tokens"):
        logging.getLogger(name).info("hello")
    logging.getLogger("twilio.http_client").warning("trouble")
    return [
        f"{line['logger']} {line['level']}" for line in map(json.loads, out.getvalue().splitlines())
    ]


@pytest.mark.usefixtures("restore_logging")
def test_third_party_info_lines_are_kept_out_at_info() -> None:
    assert emitted("INFO") == [
        "relaydesk.turns info",
        "context.tokens info",
        "twilio.http_client warning",
    ]


@pytest.mark.usefixtures("restore_logging")
def test_third_party_info_lines_come_out_at_debug() -> None:
    assert emitted("DEBUG") == [
        "twilio.http_client info",
        "aiohttp.server info",
        "relaydesk.turns info",
        "context.tokens info",
        "twilio.http_client warning",
    ]

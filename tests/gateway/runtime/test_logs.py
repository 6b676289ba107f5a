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


ASKED = ("relaydesk.access", "aiohttp.server")


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """configure_logging rewires the root logger; put it back for the tests that follow."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in (*NOISY_LOGGERS, *ASKED)}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, was in levels.items():
        logging.getLogger(name).setLevel(was)


def emitted(level: str, levels: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """Which loggers' INFO lines come out when logging is configured at `level`."""
    out = io.StringIO()
    configure_logging(level, levels=levels, stream=out)
    for name in (
        "twilio.http_client",
        "aiohttp.server",
        "aiosqlite",
        "relaydesk.turns",
        "relaydesk.access",
        "context.tokens",
    ):
        logging.getLogger(name).info("hello")
    logging.getLogger("twilio.http_client").warning("trouble")
    return [
        f"{line['logger']} {line['level']}" for line in map(json.loads, out.getvalue().splitlines())
    ]


@pytest.mark.usefixtures("restore_logging")
def test_third_party_info_lines_are_kept_out_at_info() -> None:
    assert emitted("INFO") == [
        "relaydesk.turns info",
        "relaydesk.access info",
        "context.tokens info",
        "twilio.http_client warning",
    ]


@pytest.mark.usefixtures("restore_logging")
def test_third_party_info_lines_stay_out_at_debug_unless_asked_for() -> None:
    assert emitted("DEBUG") == [
        "relaydesk.turns info",
        "relaydesk.access info",
        "context.tokens info",
        "twilio.http_client warning",
    ]
    asked = emitted("INFO", (("twilio", "DEBUG"), ("aiohttp.server", "INFO")))
    assert asked == [
        "twilio.http_client info",
        "aiohttp.server info",
        "relaydesk.turns info",
        "relaydesk.access info",
        "context.tokens info",
        "twilio.http_client warning",
    ]


@pytest.mark.usefixtures("restore_logging")
def test_an_own_logger_named_with_a_higher_level_is_quietened() -> None:
    assert emitted("INFO", (("relaydesk.access", "WARNING"),)) == [
        "relaydesk.turns info",
        "context.tokens info",
        "twilio.http_client warning",
    ]


def _fail(depth: int) -> None:
    if depth:
        _fail(depth - 1)
    raise ConnectionRefusedError("connect to 10.0.0.5:5432 refused (call +55 11 99876-5432)")


@pytest.mark.usefixtures("restore_logging")
def test_a_traceback_is_a_list_of_its_lines_beside_a_one_line_error() -> None:
    out = io.StringIO()
    configure_logging("INFO", stream=out)
    try:
        _fail(3)
    except ConnectionRefusedError:
        logging.getLogger("relaydesk.inbox").exception("inbox processing failed")
    [line] = map(json.loads, out.getvalue().splitlines())
    assert (
        line["error"] == "ConnectionRefusedError: connect to 10.0.0.5:5432 refused (call ***5432)"
    )
    assert line["exc"][0] == "Traceback (most recent call last):"
    assert sum("in _fail" in row for row in line["exc"]) == 4
    assert line["exc"][-1] == line["error"]
    assert "99876" not in out.getvalue()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.usefixtures("restore_logging")
def test_a_repeated_failure_is_logged_once_a_minute_with_the_count_held_back() -> None:
    out, clock = io.StringIO(), FakeClock()
    configure_logging("INFO", stream=out, clock=clock)
    background = logging.getLogger("relaydesk.background")

    def outage() -> None:  # what the background process logs every 15 s while the database is down
        try:
            raise ConnectionRefusedError("connection refused")
        except ConnectionRefusedError:
            background.exception("sweep failed")

    for _ in range(4):  # 0, 15, 30, 45 s: one line
        outage()
        clock.now += 15
    background.info("still serving")  # INFO is never held back
    background.warning("sweep failed")  # same message, no exception: another failure
    outage()  # 60 s after the first line: logged, with the three held back
    clock.now += 15
    outage()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [
        (line["event"], line.get("error"), line.get("repeats_suppressed")) for line in lines
    ] == [
        ("sweep failed", "ConnectionRefusedError: connection refused", None),
        ("still serving", None, None),
        ("sweep failed", None, None),
        ("sweep failed", "ConnectionRefusedError: connection refused", 3),
    ]


@pytest.mark.usefixtures("restore_logging")
def test_the_same_message_about_different_things_is_not_a_repeat() -> None:
    out, clock = io.StringIO(), FakeClock()
    configure_logging("INFO", stream=out, clock=clock)
    supervisor = logging.getLogger("relaydesk.supervisor")
    died = "child process died; another takes its place"
    for child in ("background 1", "gateway 2", "background 1"):
        supervisor.error(died, extra={"fields": {"child": child, "pid": 7}})
    supervisor.error(died, extra={"fields": {"child": "gateway 2", "pid": 8}})
    children = [
        (line["child"], line["pid"]) for line in map(json.loads, out.getvalue().splitlines())
    ]
    assert children == [("background 1", 7), ("gateway 2", 7), ("gateway 2", 8)]

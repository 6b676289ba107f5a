"""Structured (JSON) logs that never print full phone numbers, e-mails or message bodies.

Use `log.info("event", extra={"fields": {...}})`. Field values are masked by kind: phone
numbers keep their last 4 digits, e-mails their domain; fields named like bodies are dropped
below DEBUG. A traceback is the `exc` field, a list of its lines (`jq -r '.exc[]'` prints it
as Python did), beside `error`: the exception's class and first line.

Third-party libraries log at WARNING and above, at any level of our own, unless a logger is
asked for by name (`RELAYDESK_LOG_LEVELS="httpx=DEBUG,sqlalchemy.engine=INFO"`, which also
sets our own loggers': `relaydesk.access=WARNING` silences the access lines). A failure that
repeats is logged once a minute with the count of the ones held back
(`gateway.runtime.log_repeats`).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from gateway.runtime.log_repeats import SUPPRESSED_ATTR, RepeatLimiter

# Digits that look like a phone number; dots and colons excluded so addresses and times pass.
PHONE = re.compile(r"(?<![\w.+/(])\+?\(?\d[\d\s()-]{7,}\d(?![\w.:])")
EMAIL = re.compile(r"[\w.+-]+@([\w-]+\.[\w.-]+)")
BODY_FIELDS = frozenset({"text", "body", "message", "content", "transcript"})
# Our loggers: `relaydesk.*`, plus the pure packages that log under their module names.
OWN_LOGGERS = ("relaydesk", "context", "identity", "channels")
# Chatty libraries, quietened at the source so their records are not even built (twilio logs
# every request's headers at INFO; aiohttp's access log prints full query strings; aiosqlite
# logs every statement's call at DEBUG).
NOISY_LOGGERS = (
    "aiohttp.access",
    "aiosqlite",
    "alembic",
    "asyncio",
    "httpcore",
    "httpx",
    "sqlalchemy",
    "telegram",
    "twilio",
    "urllib3",
)
# The longest first line of an exception's message kept in `error`.
ERROR_CHARS = 300

LoggerLevels = Sequence[tuple[str, str]]


def mask(value: str) -> str:
    """Mask phone numbers and e-mail local parts inside any string."""
    value = EMAIL.sub(lambda m: f"***@{m.group(1)}", value)
    return PHONE.sub(lambda m: "***" + re.sub(r"\D", "", m.group(0))[-4:], value)


def safe_fields(fields: dict[str, Any], *, level: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key in BODY_FIELDS and level > logging.DEBUG:
            out[key] = f"<{len(str(value))} chars>"
        elif isinstance(value, str):
            out[key] = mask(value)
        else:
            out[key] = value
    return out


def error_summary(error: BaseException) -> str:
    """`Class: first line of the message`, short."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    name = type(error).__name__
    return mask(f"{name}: {first[:ERROR_CHARS]}" if first else name)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": mask(record.getMessage()),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            payload.update(safe_fields(fields, level=record.levelno))
        suppressed = getattr(record, SUPPRESSED_ATTR, None)
        if suppressed:
            payload[SUPPRESSED_ATTR] = suppressed
        if record.exc_info and record.exc_info[1] is not None:
            payload["error"] = error_summary(record.exc_info[1])
            payload["exc"] = mask(self.formatException(record.exc_info)).splitlines()
        return json.dumps(payload, ensure_ascii=False, default=str)


def is_own_logger(name: str) -> bool:
    return any(name == own or name.startswith(own + ".") for own in OWN_LOGGERS)


def _is_under(name: str, parents: Sequence[str]) -> bool:
    return any(name == parent or name.startswith(parent + ".") for parent in parents)


class ThirdPartyAtWarning(logging.Filter):
    """Pass every record of our own loggers and of the loggers asked for by name (their own
    level decides); only WARNING and above of anyone else's."""

    def __init__(self, asked: Sequence[str] = ()) -> None:
        super().__init__()
        self._asked = tuple(asked)

    def filter(self, record: logging.LogRecord) -> bool:
        return (
            record.levelno >= logging.WARNING
            or is_own_logger(record.name)
            or _is_under(record.name, self._asked)
        )


def configure_logging(
    level: str = "INFO",
    *,
    levels: LoggerLevels = (),
    stream: TextIO | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """JSON lines on `stream` (stderr) at `level`; third-party loggers below WARNING only those
    named in `levels` (logger name, level), at their level; repeated failures once a minute."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ThirdPartyAtWarning([name for name, _ in levels]))
    handler.addFilter(RepeatLimiter(clock=clock))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    for name, named_level in levels:
        logging.getLogger(name).setLevel(named_level)

"""Structured (JSON) logs that never print full phone numbers, e-mails or message bodies.

Use `log.info("event", extra={"fields": {...}})`. Field values are masked by kind: phone
numbers keep their last 4 digits, e-mails their domain; fields named like bodies are dropped
below DEBUG. Third-party libraries log at WARNING and above unless the level is DEBUG.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import Any, TextIO

# Digits that look like a phone number; dots and colons excluded so addresses and times pass.
PHONE = re.compile(r"(?<![\w.+/(])\+?\(?\d[\d\s()-]{7,}\d(?![\w.:])")
EMAIL = re.compile(r"[\w.+-]+@([\w-]+\.[\w.-]+)")
BODY_FIELDS = frozenset({"text", "body", "message", "content", "transcript"})
# Our loggers: `relaydesk.*`, plus the pure packages that log under their module names.
OWN_LOGGERS = ("relaydesk", "context", "identity", "channels")
# Chatty libraries, quietened at the source so their records are not even built (twilio logs
# every request's headers at INFO; aiohttp's access log prints full query strings).
NOISY_LOGGERS = (
    "aiohttp.access",
    "alembic",
    "asyncio",
    "httpcore",
    "httpx",
    "telegram",
    "twilio",
    "urllib3",
)


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
        if record.exc_info:
            payload["exc"] = mask(self.formatException(record.exc_info))
        return json.dumps(payload, ensure_ascii=False, default=str)


def is_own_logger(name: str) -> bool:
    return any(name == own or name.startswith(own + ".") for own in OWN_LOGGERS)


class ThirdPartyAtWarning(logging.Filter):
    """Pass every record of our own loggers; only WARNING and above of anyone else's."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or is_own_logger(record.name)


def configure_logging(level: str = "INFO", *, stream: TextIO | None = None) -> None:
    """JSON lines on `stream` (stderr) at `level`; third-party loggers below WARNING only at
    DEBUG."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    debug = level == "DEBUG"
    if not debug:
        # The filter catches libraries not named below (and their future loggers).
        handler.addFilter(ThirdPartyAtWarning())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if debug else logging.WARNING)

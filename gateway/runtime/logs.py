"""Structured (JSON) logs that never print full phone numbers, e-mails or message bodies.

Use `log.info("event", extra={"fields": {...}})`. Field values are masked by kind: phone
numbers keep their last 4 digits, e-mails their domain; fields named like bodies are dropped
below DEBUG.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import Any

# Digits that look like a phone number; dots and colons excluded so addresses and times pass.
PHONE = re.compile(r"(?<![\w.+/(])\+?\(?\d[\d\s()-]{7,}\d(?![\w.:])")
EMAIL = re.compile(r"[\w.+-]+@([\w-]+\.[\w.-]+)")
BODY_FIELDS = frozenset({"text", "body", "message", "content", "transcript"})


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


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # aiohttp's access log prints full query strings (visitor ids, phone numbers).
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)

"""A failure that repeats is logged once per window (a minute), with how many were held back.

A database outage in the background process fails the same way every few seconds; one line a
minute says as much, and the count of the ones in between keeps the rate visible. Records are
the same failure when they share the logger, the message template and the exception's class;
a record without an exception also shares its fields (two children dying are two events, one
child's database error every few seconds is one). Only WARNING and above are held back: INFO
lines (an access line, a refusal) always pass.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

WINDOW_S: Final = 60.0
# Distinct failures remembered at once; the oldest is forgotten first (it logs again).
MAX_KEYS: Final = 1024
# The attribute a passed record carries when earlier repeats were held back.
SUPPRESSED_ATTR: Final = "repeats_suppressed"

FailureKey = tuple[str, str, str]


@dataclass(slots=True)
class _Seen:
    logged_at: float
    held_back: int = 0


def failure_key(record: logging.LogRecord) -> FailureKey:
    error = record.exc_info[0] if record.exc_info else None
    if error is not None:
        return record.name, str(record.msg), error.__name__
    fields = getattr(record, "fields", None)
    return record.name, str(record.msg), json.dumps(fields, sort_keys=True, default=str)


class RepeatLimiter(logging.Filter):
    """Pass a failure once per `window_s`; the next one to pass carries the count of those held
    back (`repeats_suppressed`). `clock` is monotonic seconds."""

    def __init__(
        self, *, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._window_s = window_s
        self._clock = clock
        self._seen: OrderedDict[FailureKey, _Seen] = OrderedDict()
        self._lock = threading.Lock()  # libraries log from their own threads too

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = failure_key(record)
        now = self._clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen.logged_at < self._window_s:
                seen.held_back += 1
                return False
            if seen is not None and seen.held_back:
                setattr(record, SUPPRESSED_ATTR, seen.held_back)
            self._seen[key] = _Seen(now)
            self._seen.move_to_end(key)
            while len(self._seen) > MAX_KEYS:
                self._seen.popitem(last=False)
        return True

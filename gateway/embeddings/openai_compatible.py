"""Any OpenAI-compatible embeddings endpoint: OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp, TEI.

``POST {base_url}/embeddings`` with ``{"model", "input": [...], "encoding_format": "float"}``;
the answer's ``data`` holds one ``{"index", "embedding"}`` per input. The base URL includes the
API version path, as those servers document it (``https://api.openai.com/v1``,
``http://127.0.0.1:11434/v1``); a query string stays at the end (Azure's ``?api-version=…``).

Texts go in batches of at most ``batch_size``, each batch one call through the model calls'
retry loop (429, 5xx, timeouts and refused connections retried with backoff, ``Retry-After``
honoured) and admitted by a `ModelGate` of its own: at most ``concurrency`` calls in flight,
and a 429's ``Retry-After`` pauses every call to the endpoint, not only the one that got it.
Every answer is checked (one vector per input, each index once, one dimension throughout)
before its vectors are normalized; anything else raises `EmbeddingFailed`.

Caching is `CachedEmbedder`'s job (``cache.py``), wrapped around this by ``from_settings.py``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from typing import Final

import httpx

from gateway.embeddings.base import EmbeddingFailed, EmbeddingKind, Vector
from gateway.embeddings.vectors import unit_vector
from gateway.providers.base import ProviderError
from gateway.providers.limits import ModelGate
from gateway.providers.retry import (
    DEFAULT_RETRY,
    JsonReply,
    ProviderRequest,
    RetryPolicy,
    Target,
    post_json,
)

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_CONCURRENCY", "OpenAICompatEmbedder", "embeddings_url"]

DEFAULT_BATCH_SIZE: Final = 64
DEFAULT_CONCURRENCY: Final = 4
# OpenAI refuses more inputs in one request; the other servers take at least as many.
MAX_BATCH_SIZE: Final = 2048
# The gate's key for this endpoint's calls: they have no tenant of their own.
_GATE_TENANT: Final = "embeddings"
# Azure OpenAI reads its keys from ``api-key`` (both its v1 and its deployment URLs); a key
# sent as a Bearer token is taken there for an Entra ID token.
_AZURE_HOST_SUFFIXES: Final = (".openai.azure.com", ".cognitiveservices.azure.com")


def embeddings_url(base_url: str) -> str:
    """``{base_url}/embeddings``, the base's query string (if any) kept at the end."""
    url = httpx.URL(base_url.strip())
    return str(url.copy_with(path=url.path.rstrip("/") + "/embeddings"))


class OpenAICompatEmbedder:
    """An embedding model behind an OpenAI-compatible endpoint, called on the shared ``http``
    client. Without ``api_key`` no key header is sent (local servers need none).

    ``prefixes`` is what each kind's texts start with for models trained that way (e5 served
    by vLLM or TEI wants ``"query: "`` and ``"passage: "``); OpenAI's models want none.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        model: str,
        base_url: str,
        api_key: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        concurrency: int = DEFAULT_CONCURRENCY,
        prefixes: Mapping[EmbeddingKind, str] | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise ValueError(f"batch_size must be 1..{MAX_BATCH_SIZE}, got {batch_size}")
        if not model.strip():
            raise ValueError("an embedding model needs a name")
        self._http = http
        self._model = model.strip()
        self._url = embeddings_url(base_url)
        self._api_key = api_key or None
        self._batch_size = batch_size
        self._prefixes: Mapping[EmbeddingKind, str] = dict(prefixes or {})
        self._timeout_s = timeout_s
        self._retry = retry
        self._gate = ModelGate(process_limit=concurrency)
        self._target = Target("embeddings", self._model)
        # The first answer fixes the dimension; a later one that differs means the model
        # behind the name changed, and its vectors could not be ranked with the stored ones.
        self._dimension: int | None = None

    def __repr__(self) -> str:  # the key stays out of logs and tracebacks
        return f"OpenAICompatEmbedder(model={self._model!r}, url={self._url!r})"

    @property
    def name(self) -> str:
        return self._model

    @property
    def url(self) -> str:
        return self._url

    def headers(self) -> dict[str, str]:
        headers = {"accept": "application/json"}
        if self._api_key is None:
            return headers
        if httpx.URL(self._url).host.endswith(_AZURE_HOST_SUFFIXES):
            headers["api-key"] = self._api_key
        else:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    async def embed(self, texts: Sequence[str], kind: EmbeddingKind) -> list[Vector]:
        if not texts:
            return []
        # OpenAI refuses an empty input with a 400 that would fail the whole batch; say which.
        for position, text in enumerate(texts):
            if not text.strip():
                raise EmbeddingFailed(f"text {position} is empty: there is nothing to embed")
        prefix = self._prefixes.get(kind, "")
        inputs = [prefix + text for text in texts]
        batches = [
            inputs[start : start + self._batch_size]
            for start in range(0, len(inputs), self._batch_size)
        ]
        answers = await asyncio.gather(
            *(self._embed_batch(batch) for batch in batches), return_exceptions=True
        )
        vectors: list[Vector] = []
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
            vectors.extend(answer)
        return vectors

    async def _embed_batch(self, inputs: list[str]) -> list[Vector]:
        request = ProviderRequest(
            http=self._http,
            url=self._url,
            payload={"model": self._model, "input": inputs, "encoding_format": "float"},
            headers=self.headers(),
            timeout_s=self._timeout_s,
            policy=self._retry,
            target=self._target,
        )
        try:
            async with self._gate.admit(self._target.provider, _GATE_TENANT):
                reply = await post_json(request)
        except ProviderError as exc:
            raise EmbeddingFailed(str(exc)) from exc
        return self._vectors(reply, len(inputs))

    def _vectors(self, reply: JsonReply, expected: int) -> list[Vector]:
        """The answer's vectors in the inputs' order (by ``index``), checked and normalized."""
        data = reply.field("data")
        if not isinstance(data, list) or len(data) != expected:
            count = len(data) if isinstance(data, list) else "no"
            raise EmbeddingFailed(f"{self._model}: {count} embeddings for {expected} inputs")
        by_index: dict[int, list[float]] = {}
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            values = _floats(item.get("embedding") if isinstance(item, dict) else None)
            if not isinstance(index, int) or not 0 <= index < expected or index in by_index:
                raise EmbeddingFailed(f"{self._model}: a missing, repeated or unknown index")
            if values is None:
                raise EmbeddingFailed(f"{self._model}: an embedding that is not a float list")
            by_index[index] = values
        dimensions = {len(values) for values in by_index.values()}
        if self._dimension is not None:
            dimensions.add(self._dimension)
        if len(dimensions) != 1:
            raise EmbeddingFailed(f"{self._model}: vectors of dimensions {sorted(dimensions)}")
        self._dimension = dimensions.pop()
        return [unit_vector(by_index[index]) for index in range(expected)]

    async def close(self) -> None:
        """Nothing of its own to close: the HTTP client is the process's."""


def _floats(value: object) -> list[float] | None:
    """A JSON array of finite numbers as floats; None for anything else (base64 text too)."""
    if not isinstance(value, list):
        return None
    floats: list[float] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | float):
            return None
        number = float(item)
        if not math.isfinite(number):
            return None
        floats.append(number)
    return floats

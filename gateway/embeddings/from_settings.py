"""The process's `Embedder` built from its settings (`RELAYDESK_EMBEDDINGS_*`), or None when
embeddings are off and recall ranks lexically only."""

from __future__ import annotations

from typing import Final

import httpx

from gateway.config import Settings
from gateway.embeddings.base import Embedder
from gateway.embeddings.cache import CachedEmbedder, VectorCache
from gateway.embeddings.offline import OfflineEmbedder
from gateway.embeddings.openai_compatible import OpenAICompatEmbedder
from gateway.providers.base import ProviderConfigError

__all__ = ["OPENAI_EMBEDDINGS_URL", "embedder_for", "query_embedder_for"]

OPENAI_EMBEDDINGS_URL: Final = "https://api.openai.com/v1"
# Messages whose vectors are kept: a customer's next reply and a repeated question cost none.
QUERY_VECTORS: Final = 1_024


def embedder_for(
    settings: Settings, http: httpx.AsyncClient, *, cache: VectorCache | None = None
) -> Embedder | None:
    """The configured embedder behind a vector cache; None when ``off``.

    Raises `ProviderConfigError` for OpenAI's own endpoint without a key: a mistake to stop for
    at start, not to find on the first row embedded.
    """
    if settings.embeddings_provider == "off":
        return None
    if settings.embeddings_provider == "offline":
        return CachedEmbedder(OfflineEmbedder(threads=settings.embeddings_threads), cache)
    return CachedEmbedder(_remote(settings, http), cache)


def query_embedder_for(settings: Settings, http: httpx.AsyncClient) -> Embedder | None:
    """The embedder a reply's own message goes to (`gateway.embeddings.similarity`): apart
    from the background's, so a message never waits behind a batch of rows; the offline model
    at the process's priority. None when embeddings are off."""
    if settings.embeddings_provider == "off":
        return None
    if settings.embeddings_provider == "offline":
        return CachedEmbedder(
            OfflineEmbedder(threads=settings.embeddings_threads, niceness=0),
            VectorCache(QUERY_VECTORS),
        )
    return CachedEmbedder(_remote(settings, http), VectorCache(QUERY_VECTORS))


def _remote(settings: Settings, http: httpx.AsyncClient) -> OpenAICompatEmbedder:
    key = settings.embeddings_api_key
    api_key = key.get_secret_value() if key is not None else None
    base_url = settings.embeddings_url or OPENAI_EMBEDDINGS_URL
    if not api_key and httpx.URL(base_url).host == "api.openai.com":
        raise ProviderConfigError("api.openai.com needs an API key (RELAYDESK_EMBEDDINGS_API_KEY)")
    return OpenAICompatEmbedder(
        http,
        model=settings.embeddings_model,
        base_url=base_url,
        api_key=api_key,
        batch_size=settings.embeddings_batch,
        concurrency=settings.embeddings_concurrency,
        prefixes={
            "query": settings.embeddings_query_prefix,
            "passage": settings.embeddings_passage_prefix,
        },
    )

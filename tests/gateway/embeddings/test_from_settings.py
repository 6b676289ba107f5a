"""The process's embedder built from `RELAYDESK_EMBEDDINGS_*`."""

from __future__ import annotations

import httpx
import pytest

from gateway.config import ConfigError, load_settings
from gateway.embeddings.cache import CachedEmbedder
from gateway.embeddings.from_settings import embedder_for
from gateway.embeddings.offline import OFFLINE_MODEL
from gateway.providers.base import ProviderConfigError
from tests.gateway.embeddings.conftest import StartEmbeddings
from tests.support.openai_embeddings_server import FakeEmbeddings

SECRET = "sk-from-settings"


@pytest.fixture(autouse=True)
def no_config_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELAYDESK_CONFIG", raising=False)
    for variable in ("PROVIDER", "URL", "MODEL", "API_KEY", "BATCH", "QUERY_PREFIX"):
        monkeypatch.delenv(f"RELAYDESK_EMBEDDINGS_{variable}", raising=False)


async def test_off_builds_none(monkeypatch: pytest.MonkeyPatch, http: httpx.AsyncClient) -> None:
    monkeypatch.setenv("RELAYDESK_EMBEDDINGS_PROVIDER", "off")

    assert embedder_for(load_settings(), http) is None


async def test_the_default_is_the_offline_model_behind_a_cache(http: httpx.AsyncClient) -> None:
    embedder = embedder_for(load_settings(), http)

    assert isinstance(embedder, CachedEmbedder)
    assert embedder.name == OFFLINE_MODEL


async def test_openai_without_a_url_or_key_stops_at_start(
    monkeypatch: pytest.MonkeyPatch, http: httpx.AsyncClient
) -> None:
    monkeypatch.setenv("RELAYDESK_EMBEDDINGS_PROVIDER", "openai")

    with pytest.raises(ProviderConfigError, match="RELAYDESK_EMBEDDINGS_API_KEY"):
        embedder_for(load_settings(), http)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("RELAYDESK_EMBEDDINGS_PROVIDER", "sentence-transformers"),
        ("RELAYDESK_EMBEDDINGS_URL", "localhost:11434/v1"),
        ("RELAYDESK_EMBEDDINGS_BATCH", "0"),
        ("RELAYDESK_EMBEDDINGS_BATCH", "4096"),
    ],
)
def test_a_wrong_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)

    with pytest.raises(ConfigError, match=variable):
        load_settings()


async def test_an_endpoint_from_the_settings(
    monkeypatch: pytest.MonkeyPatch, http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings()
    base = await start_embeddings(fake)
    monkeypatch.setenv("RELAYDESK_EMBEDDINGS_PROVIDER", "openai")
    monkeypatch.setenv("RELAYDESK_EMBEDDINGS_URL", base + "/")
    monkeypatch.setenv("RELAYDESK_EMBEDDINGS_MODEL", "multilingual-e5-small")
    monkeypatch.setenv("RELAYDESK_EMBEDDINGS_API_KEY", SECRET)
    monkeypatch.setenv("RELAYDESK_EMBEDDINGS_BATCH", "2")
    monkeypatch.setenv("RELAYDESK_EMBEDDINGS_QUERY_PREFIX", "query: ")
    embedder = embedder_for(load_settings(), http)
    assert embedder is not None

    await embedder.embed(["a", "b", "c"], "query")
    await embedder.embed(["c"], "query")  # cached

    assert embedder.name == "multilingual-e5-small"
    assert sorted(len(request.inputs) for request in fake.requests) == [1, 2]
    assert {text for request in fake.requests for text in request.inputs} == {
        "query: a",
        "query: b",
        "query: c",
    }
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in fake.requests)

"""The OpenAI-compatible embeddings provider against a local server speaking the protocol."""

from __future__ import annotations

import math
import time
from collections import deque

import httpx
import pytest
from pytest_aiohttp import AiohttpServer

from gateway.embeddings.base import EmbeddingFailed, EmbeddingKind
from gateway.embeddings.cache import CachedEmbedder
from gateway.embeddings.openai_compatible import OpenAICompatEmbedder, embeddings_url
from gateway.providers.retry import RetryPolicy
from tests.gateway.embeddings.conftest import StartEmbeddings
from tests.support.openai_embeddings_server import (
    FakeEmbeddings,
    Fault,
    raw_vector,
)

KEY = "sk-embeddings-test"
FAST = RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=1.0)
TEXTS = ["Qual o prazo de entrega?", "Do you ship to Lisbon?", "Aceitam Pix?"]


def embedder(
    http: httpx.AsyncClient,
    base_url: str,
    *,
    api_key: str | None = KEY,
    batch_size: int = 64,
    concurrency: int = 4,
    prefixes: dict[EmbeddingKind, str] | None = None,
    retry: RetryPolicy = FAST,
) -> OpenAICompatEmbedder:
    """``text-embedding-3-small`` at ``base_url``, retried within a second."""
    return OpenAICompatEmbedder(
        http,
        model="text-embedding-3-small",
        base_url=base_url,
        api_key=api_key,
        batch_size=batch_size,
        concurrency=concurrency,
        prefixes=prefixes,
        timeout_s=5.0,
        retry=retry,
    )


def direction(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(value * value for value in values))
    return [value / norm for value in values]


def assert_same(vector: tuple[float, ...], expected: list[float]) -> None:
    assert vector == pytest.approx(expected, abs=1e-6)


async def test_request_carries_model_inputs_float_format_and_bearer_key(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings()
    base = await start_embeddings(fake)

    await embedder(http, base).embed(TEXTS, "passage")

    [request] = fake.requests
    assert request.body == {
        "model": "text-embedding-3-small",
        "input": TEXTS,
        "encoding_format": "float",
    }
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"


async def test_no_key_sends_no_authorization(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings()
    base = await start_embeddings(fake)

    await embedder(http, base, api_key=None).embed(TEXTS[:1], "query")

    assert "authorization" not in fake.requests[0].headers


async def test_vectors_are_unit_length_in_the_servers_direction(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings(dimension=16)
    base = await start_embeddings(fake)

    vectors = await embedder(http, base).embed(TEXTS, "passage")

    assert len(vectors) == 3
    for vector, text in zip(vectors, TEXTS, strict=True):
        assert len(vector) == 16
        assert math.sqrt(sum(value * value for value in vector)) == pytest.approx(1.0, abs=1e-6)
        assert_same(vector, direction(raw_vector(text, 16)))


async def test_vectors_follow_the_index_not_the_order_of_the_answer(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings(reverse=True)
    base = await start_embeddings(fake)

    vectors = await embedder(http, base).embed(TEXTS, "passage")

    for vector, text in zip(vectors, TEXTS, strict=True):
        assert_same(vector, direction(raw_vector(text, 8)))


async def test_texts_are_sent_in_batches_and_come_back_in_order(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings()
    base = await start_embeddings(fake)
    texts = [f"linha {number}" for number in range(5)]

    vectors = await embedder(http, base, batch_size=2).embed(texts, "passage")

    assert sorted(len(request.inputs) for request in fake.requests) == [1, 2, 2]
    assert sorted(text for request in fake.requests for text in request.inputs) == texts
    for vector, text in zip(vectors, texts, strict=True):
        assert_same(vector, direction(raw_vector(text, 8)))


async def test_batches_in_flight_stay_within_the_concurrency(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings(delay_s=0.05)
    base = await start_embeddings(fake)
    texts = [f"linha {number}" for number in range(8)]

    await embedder(http, base, batch_size=1, concurrency=2).embed(texts, "passage")

    assert len(fake.requests) == 8
    assert fake.peak_in_flight == 2


async def test_a_cached_text_costs_no_request(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings()
    base = await start_embeddings(fake)
    cached = CachedEmbedder(embedder(http, base))

    first = await cached.embed(TEXTS, "passage")
    again = await cached.embed(list(reversed(TEXTS)), "passage")

    assert len(fake.requests) == 1
    assert again == list(reversed(first))


async def test_the_cache_asks_only_for_new_texts_each_once(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings()
    base = await start_embeddings(fake)
    cached = CachedEmbedder(embedder(http, base))
    await cached.embed(TEXTS[:1], "passage")

    vectors = await cached.embed([TEXTS[0], "nova", "nova"], "passage")
    await cached.embed(TEXTS[:1], "query")  # another kind is another vector

    assert [request.inputs for request in fake.requests] == [TEXTS[:1], ["nova"], TEXTS[:1]]
    assert vectors[1] == vectors[2]
    assert_same(vectors[1], direction(raw_vector("nova", 8)))


async def test_prefixes_mark_the_kind(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings()
    base = await start_embeddings(fake)
    e5 = embedder(http, base, prefixes={"query": "query: ", "passage": "passage: "})

    await e5.embed(["prazo"], "query")
    await e5.embed(["prazo"], "passage")

    assert [request.inputs for request in fake.requests] == [["query: prazo"], ["passage: prazo"]]


async def test_429_is_retried_after_the_servers_retry_after(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    limited = Fault(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "0.3"})
    fake = FakeEmbeddings(faults=deque([limited]))
    base = await start_embeddings(fake)

    started = time.monotonic()
    vectors = await embedder(http, base).embed(TEXTS, "passage")

    assert time.monotonic() - started >= 0.3
    assert len(fake.requests) == 2
    assert fake.requests[0].body == fake.requests[1].body
    assert len(vectors) == 3


async def test_a_500_then_the_answer(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings(faults=deque([Fault(500, {"error": {"message": "server error"}})]))
    base = await start_embeddings(fake)

    vectors = await embedder(http, base).embed(TEXTS, "passage")

    assert len(fake.requests) == 2
    assert_same(vectors[2], direction(raw_vector(TEXTS[2], 8)))


async def test_gives_up_after_the_policy_attempts(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    overloaded = Fault(503, {"error": {"message": "overloaded"}})
    fake = FakeEmbeddings(faults=deque([overloaded] * 5))
    base = await start_embeddings(fake)

    with pytest.raises(EmbeddingFailed, match="overloaded"):
        await embedder(http, base).embed(TEXTS, "passage")

    assert len(fake.requests) == 3


async def test_a_refused_request_is_not_retried_and_the_key_stays_out(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings(faults=deque([Fault(401, {"error": {"message": "Incorrect API key"}})]))
    base = await start_embeddings(fake)
    provider = embedder(http, base)

    with pytest.raises(EmbeddingFailed) as caught:
        await provider.embed(TEXTS, "passage")

    assert len(fake.requests) == 1
    assert "Incorrect API key" in str(caught.value)
    assert KEY not in str(caught.value) and KEY not in repr(provider)


def _item(index: object, embedding: object) -> dict[str, object]:
    return {"object": "embedding", "index": index, "embedding": embedding}


MALFORMED = {
    "one vector short": lambda inputs: {"data": [_item(0, [1.0, 2.0])]},
    "no data": lambda inputs: {"object": "list"},
    "an index repeated": lambda inputs: {
        "data": [_item(0, [1.0, 2.0]) for _ in inputs],
    },
    "an index out of range": lambda inputs: {
        "data": [_item(index + 1, [1.0, 2.0]) for index, _ in enumerate(inputs)],
    },
    "no index": lambda inputs: {"data": [{"embedding": [1.0, 2.0]} for _ in inputs]},
    "base64 instead of floats": lambda inputs: {
        "data": [_item(index, "AACAPwAAAEA=") for index, _ in enumerate(inputs)],
    },
    "a string in the vector": lambda inputs: {
        "data": [_item(index, [1.0, "2"]) for index, _ in enumerate(inputs)],
    },
    "two dimensions": lambda inputs: {
        "data": [_item(index, [1.0] * (2 + index)) for index, _ in enumerate(inputs)],
    },
    "a zero vector": lambda inputs: {
        "data": [_item(index, [0.0, 0.0]) for index, _ in enumerate(inputs)],
    },
    "an empty vector": lambda inputs: {
        "data": [_item(index, []) for index, _ in enumerate(inputs)],
    },
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
async def test_a_malformed_answer_fails(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings, case: str
) -> None:
    fake = FakeEmbeddings(answer=MALFORMED[case])
    base = await start_embeddings(fake)

    with pytest.raises(EmbeddingFailed):
        await embedder(http, base).embed(TEXTS, "passage")


async def test_a_body_that_is_not_json_fails(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings(answer=lambda inputs: ["not", "an", "object"])
    base = await start_embeddings(fake)

    with pytest.raises(EmbeddingFailed, match="not an object"):
        await embedder(http, base).embed(TEXTS, "passage")


async def test_a_change_of_dimension_between_calls_fails(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings(dimension=8)
    base = await start_embeddings(fake)
    provider = embedder(http, base)
    await provider.embed(TEXTS[:1], "passage")
    fake.dimension = 12

    with pytest.raises(EmbeddingFailed, match="dimensions"):
        await provider.embed(TEXTS[1:2], "passage")


async def test_an_unreachable_endpoint_fails(http: httpx.AsyncClient) -> None:
    closed = "http://127.0.0.1:9/v1"  # the discard port: nothing listens

    with pytest.raises(EmbeddingFailed, match="connect"):
        await embedder(http, closed, retry=RetryPolicy(2, 0.01, 0.01)).embed(TEXTS, "query")


async def test_an_empty_text_fails_before_any_request(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings()
    base = await start_embeddings(fake)

    with pytest.raises(EmbeddingFailed, match="text 1 is empty"):
        await embedder(http, base).embed(["prazo", "  "], "passage")

    assert fake.requests == []


async def test_nothing_to_embed_makes_no_request(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings()
    base = await start_embeddings(fake)

    assert await embedder(http, base).embed([], "passage") == []
    assert fake.requests == []


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com/v1/embeddings"),
        ("http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434/v1/embeddings"),
        (
            "https://desk.openai.azure.com/openai/deployments/emb?api-version=2024-10-21",
            "https://desk.openai.azure.com/openai/deployments/emb/embeddings"
            "?api-version=2024-10-21",
        ),
    ],
)
def test_the_embeddings_url_keeps_the_version_path_and_query(base: str, url: str) -> None:
    assert embeddings_url(base) == url


async def test_azure_reads_the_key_from_api_key(http: httpx.AsyncClient) -> None:
    azure = embedder(http, "https://desk.openai.azure.com/openai/v1")

    assert azure.headers() == {"accept": "application/json", "api-key": KEY}


async def test_an_azure_style_url_is_posted_with_its_query(
    http: httpx.AsyncClient, aiohttp_server: AiohttpServer
) -> None:
    fake = FakeEmbeddings()
    server = await aiohttp_server(fake.app("/openai/deployments/emb/embeddings"))
    base = str(server.make_url("/openai/deployments/emb")) + "?api-version=2024-10-21"

    await embedder(http, base).embed(TEXTS[:1], "query")

    assert fake.requests[0].query == {"api-version": "2024-10-21"}

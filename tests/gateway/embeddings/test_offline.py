"""The offline default: the bundled multilingual e5 model, run on the CPU in a worker thread."""

from __future__ import annotations

import asyncio
import math
import os
import threading

import pytest

from gateway.embeddings.base import EmbeddingKind, Vector
from gateway.embeddings.offline import NICENESS, OFFLINE_MODEL, OfflineEmbedder


@pytest.fixture
def offline() -> OfflineEmbedder:
    return OfflineEmbedder()


def cosine(a: Vector, b: Vector) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_vectors_have_384_dimensions_and_unit_length(offline: OfflineEmbedder) -> None:
    vectors = await offline.embed(["Qual o prazo de entrega?", "Do you ship to Lisbon?"], "passage")

    assert offline.name == OFFLINE_MODEL
    assert [len(vector) for vector in vectors] == [384, 384]
    for vector in vectors:
        assert math.sqrt(sum(value * value for value in vector)) == pytest.approx(1.0, abs=1e-5)
    assert cosine(vectors[0], vectors[1]) < 0.99  # two texts, two directions


@pytest.mark.parametrize(
    ("question", "paraphrase", "unrelated"),
    [
        (
            "Como faço para pagar com Pix?",
            "Vocês aceitam pagamento por Pix?",
            "Minha filha começou a estudar piano na escola nova.",
        ),
        (
            "Que horas a loja abre no sábado?",
            "Qual é o horário de funcionamento da loja aos sábados?",
            "Esqueci minha senha e não consigo entrar na conta.",
        ),
        (
            "Meu pacote está atrasado",
            "Meu pedido ainda não chegou, já faz duas semanas.",
            "Vocês aceitam pagamento por Pix?",
        ),
    ],
)
async def test_a_portuguese_question_is_nearer_its_paraphrase(
    offline: OfflineEmbedder, question: str, paraphrase: str, unrelated: str
) -> None:
    [asked] = await offline.embed([question], "query")
    near, far = await offline.embed([paraphrase, unrelated], "passage")

    assert cosine(asked, near) > cosine(asked, far)


async def test_a_question_across_languages_finds_its_passage(offline: OfflineEmbedder) -> None:
    [asked] = await offline.embed(["Which countries in Europe has she visited?"], "query")
    near, far = await offline.embed(
        ["Fui fazer trilha na Espanha com a minha irmã no verão.", "Meu pedido não chegou."],
        "passage",
    )

    assert cosine(asked, near) > cosine(asked, far)


async def test_the_kind_changes_the_vector(offline: OfflineEmbedder) -> None:
    [as_query] = await offline.embed(["prazo de entrega"], "query")
    [as_passage] = await offline.embed(["prazo de entrega"], "passage")

    assert as_query != as_passage  # e5's "query: " and "passage: " prefixes


async def test_batches_give_the_vectors_of_single_texts(offline: OfflineEmbedder) -> None:
    texts = [f"mensagem número {number} sobre a entrega" for number in range(40)]

    together = await offline.embed(texts, "passage")
    [alone] = await offline.embed(texts[37:38], "passage")

    assert len(together) == 40
    assert together[37] == pytest.approx(alone, abs=1e-4)


async def test_the_event_loop_keeps_running_while_it_embeds(offline: OfflineEmbedder) -> None:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    ticker = asyncio.create_task(tick())
    await offline.embed([f"uma frase mais longa, a de número {n}" for n in range(48)], "passage")
    ticker.cancel()

    assert ticks >= 5


async def test_nothing_to_embed(offline: OfflineEmbedder) -> None:
    assert await offline.embed([], "query") == []


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="per-thread niceness is Linux's")
async def test_it_embeds_in_its_own_thread_at_the_lowest_priority(offline: OfflineEmbedder) -> None:
    seen: list[tuple[str, int]] = []
    original = offline._embed_now

    def watched(texts: list[str], kind: EmbeddingKind) -> list[Vector]:
        tid = threading.get_native_id()
        seen.append((threading.current_thread().name, os.getpriority(os.PRIO_PROCESS, tid)))
        return original(texts, kind)

    offline._embed_now = watched  # type: ignore[method-assign]
    await offline.embed(["uma frase"], "passage")
    await offline.close()

    [(name, niceness)] = seen
    assert name.startswith("embed")
    assert niceness == NICENESS
    # The process's own threads keep their priority.
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) < NICENESS

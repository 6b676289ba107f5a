"""LoCoMo evaluation with hybrid recall: lexical and hybrid side by side, the vectors kept on
disk so a second run computes none, and the ``--recall`` option of the command."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from devtools.eval.locomo import load
from devtools.eval.report import EmbeddingCost, summarize
from devtools.eval.run import HYBRID, LEXICAL, evaluate
from devtools.eval.vectors import DiskCachedEmbedder
from gateway.cli import main
from gateway.embeddings.base import EmbeddingKind, Vector
from tests.devtools.eval.test_locomo import _write

# What the stand-in model understands: each concept one dimension, plus one shared by all.
CONCEPTS = (
    ("dog", "greyhound", "biscuit", "pet"),
    ("garage", "boxes", "attic"),
    ("lamp", "notebooks"),
)


class ConceptEmbedder:
    """A deterministic stand-in for a provider: texts naming the same concept point the same
    way, so "pet" finds "greyhound" with no word in common."""

    def __init__(self) -> None:
        self.embedded = 0

    @property
    def name(self) -> str:
        return "test:concepts"

    async def embed(self, texts: Sequence[str], kind: EmbeddingKind) -> list[Vector]:
        self.embedded += len(texts)
        out = []
        for text in texts:
            lowered = text.casefold()
            values = [0.1] + [
                float(sum(lowered.count(word) for word in words)) for words in CONCEPTS
            ]
            norm = math.sqrt(sum(value * value for value in values))
            out.append(tuple(value / norm for value in values))
        return out

    async def close(self) -> None:
        return None


def _with_pet_question(tmp_path: Path) -> Path:
    path = _write(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data[0]["qa"].append(
        {
            "question": "Which pet joined the family?",
            "answer": "x",
            "evidence": ["D1:1"],
            "category": 1,
        }
    )
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


async def test_both_recalls_side_by_side_and_a_warm_cache(tmp_path: Path) -> None:
    conversations = load(_with_pet_question(tmp_path))
    inner = ConceptEmbedder()
    embedder = DiskCachedEmbedder(inner, tmp_path / "vectors")
    outcomes = await evaluate(conversations, recall="both", embedder=embedder)
    assert embedder.counts.computed == inner.embedded > 0
    methods = [o.method for o in outcomes]
    assert methods.count(LEXICAL) == methods.count(HYBRID) == 4
    pet = [o for o in outcomes if o.method == HYBRID and o.category == 1]
    assert pet[-1].covered is True
    report = summarize(outcomes, split="dev", window=8192, embedding=EmbeddingCost(1.0, 5, 7))
    assert list(report.overall) == [LEXICAL, HYBRID, "recency", "bm25", "full"]
    assert (
        "hybrid" in report.table() and "vectors 1 s, 5 computed, 7 from the cache" in report.table()
    )
    await embedder.close()

    # A second run reads every vector from the disk and ranks exactly as the first.
    again = ConceptEmbedder()
    warm = DiskCachedEmbedder(again, tmp_path / "vectors")
    rerun = await evaluate(conversations, recall="hybrid", embedder=warm)
    assert [o for o in rerun if o.method == HYBRID] == [o for o in outcomes if o.method == HYBRID]
    assert again.embedded == 0 and warm.counts.computed == 0 and warm.counts.cached > 0
    await warm.close()


async def test_hybrid_recall_needs_an_embedder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="embedder"):
        await evaluate(load(_write(tmp_path)), recall="hybrid")


def test_the_command_takes_the_recall_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Lexical needs no model; the option is parsed and the table printed.
    path = _write(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data[0]["sample_id"] = "conv-26"  # a conversation of the dev split
    path.write_text(json.dumps(data), encoding="utf-8")
    code = main(["eval", "locomo", "--data", str(path), "--recall", "lexical", "--json"])
    assert code == 0
    line = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert set(line["overall"]) == {LEXICAL, "recency", "bm25", "full"}

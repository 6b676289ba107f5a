"""The knowledge evaluation: does the knowledge slice bring the answering document, and do the
citations of a reply resolve to it?

For each question of the corpus (`devtools.eval.faq`) the knowledge slice is built as the
reply path builds it (`devtools.eval.knowledge_slice`: the default 8k window's 600 tokens),
lexically and, given an embedder, hybrid, for a ``verified`` customer (who may be told every
document). Each outcome records:

* whether the gold document is among the chunks the slice holds, and the rank of its first
  chunk in what the slice ranked (for hit@1 and the mean reciprocal rank);
* citations: a simulated model cites the line of the gold document when the window holds it
  (else its first line) and one number the window never held; the reply goes through
  `context.citations.resolve_citations`, and the outcome says whether the genuine citation
  resolved to the document of the line cited and whether the forged one was dropped;
* the audience check: the same question asked by an anonymous visitor, whose candidates are
  the chunks `identity.audience.may_see` lets an anonymous link level be told; the count of
  ``verified`` chunks in that window (it must be 0), beside the count in the verified
  customer's window (what the check had to catch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from context.budget import Budget
from context.citations import resolve_citations
from context.knowledge import knowledge_refs
from context.knowledge_index import KnowledgeIndex, build_knowledge_index
from context.knowledge_refs import KnowledgeRef, marker
from context.tokens import TokenCounter
from devtools.eval.faq import CorpusChunk, CorpusQuestion, KnowledgeCorpus
from devtools.eval.knowledge_slice import (
    KnowledgeSlice,
    hybrid_ranking,
    lexical_ranking,
    packed_slice,
)
from gateway.embeddings.base import Embedder
from identity.audience import Audience, may_see
from identity.levels import LinkLevel

__all__ = [
    "HYBRID",
    "LEXICAL",
    "Citation",
    "KnowledgeOutcome",
    "Method",
    "cited_reply",
    "evaluate_knowledge",
    "knowledge_budget",
]

Method = Literal["lexical", "hybrid"]
LEXICAL: Final[Method] = "lexical"
HYBRID: Final[Method] = "hybrid"


def knowledge_budget() -> int:
    """The knowledge slice's own tokens in the default 8k window."""
    return Budget.default().slice_budget("knowledge")


@dataclass(frozen=True, slots=True)
class Citation:
    """A simulated reply's citations, resolved: the genuine one (None: the window held no
    line), whether it resolved to the document of the line cited, whether it is the gold
    document, and whether the forged number was dropped."""

    cited: int | None
    right_document: bool
    gold: bool
    forged_dropped: bool


@dataclass(frozen=True, slots=True)
class KnowledgeOutcome:
    method: Method
    question: str  # its section number
    hit: bool  # the gold document among the chunks of the slice
    rank: int | None  # 1-based rank of the gold's first chunk in the ranking; None: absent
    lines: int
    tokens: int
    citation: Citation
    verified_lines: int  # verified chunks in the verified customer's window
    anonymous_leaks: int  # verified chunks in an anonymous visitor's window


def cited_reply(refs: Sequence[KnowledgeRef], gold_document_id: str) -> Citation:
    """What a model citing the gold line (else the first) plus a forged number gets back."""
    number = next((ref.number for ref in refs if ref.document_id == gold_document_id), None)
    if number is None and refs:
        number = refs[0].number
    forged = len(refs) + 1
    cited = f" as the guide says {marker(number)}" if number is not None else ""
    reply = resolve_citations(f"Here is the answer{cited}, and more {marker(forged)}.", refs)
    meant = refs[number - 1].document_id if number is not None else None
    documents = [source.document_id for source in reply.sources]
    return Citation(
        cited=number,
        right_document=meant is not None and documents == [meant],
        gold=documents == [gold_document_id],
        forged_dropped=reply.dropped_markers == 1 and marker(forged) not in reply.text,
    )


@dataclass(frozen=True, slots=True)
class _Candidates:
    """The chunks one link level may be told, indexed, and their vectors' rows."""

    index: KnowledgeIndex
    rows: tuple[int, ...]  # each chunk's row in the corpus


def _candidates(chunks: Sequence[CorpusChunk], level: LinkLevel) -> _Candidates:
    rows = tuple(row for row, chunk in enumerate(chunks) if may_see(level, chunk.audience))
    items = [chunks[row].item for row in rows]
    return _Candidates(build_knowledge_index(items, [item.terms for item in items]), rows)


def _slice(
    method: Method,
    question: str,
    candidates: _Candidates,
    cosines: Sequence[float] | None,
    budget: int,
    counter: TokenCounter,
) -> KnowledgeSlice:
    if method == HYBRID:
        if cosines is None:
            raise ValueError("hybrid ranking needs the question's cosines")
        similarities = [cosines[row] for row in candidates.rows]
        ranked = hybrid_ranking(question, candidates.index, similarities)
    else:
        ranked = lexical_ranking(question, candidates.index)
    return packed_slice(ranked, budget, counter)


def _outcome(
    method: Method,
    question: CorpusQuestion,
    seen: KnowledgeSlice,
    anonymous: KnowledgeSlice,
    audience_of: dict[str, Audience],
) -> KnowledgeOutcome:
    gold = question.gold_document_id
    rank = next(
        (n for n, item in enumerate(seen.ranked, start=1) if item.document_id == gold), None
    )

    def verified(chosen: KnowledgeSlice) -> int:
        return sum(1 for item in chosen.window if audience_of[item.id] is Audience.VERIFIED)

    return KnowledgeOutcome(
        method=method,
        question=question.number,
        hit=any(item.document_id == gold for item in seen.window),
        rank=rank,
        lines=len(seen.window),
        tokens=seen.tokens,
        citation=cited_reply(knowledge_refs(seen.window), gold),
        verified_lines=verified(seen),
        anonymous_leaks=verified(anonymous),
    )


async def _cosines(corpus: KnowledgeCorpus, embedder: Embedder) -> tuple[tuple[float, ...], ...]:
    """Each question's cosine with every chunk (the vectors are unit vectors)."""
    import numpy as np

    passages = await embedder.embed([chunk.passage for chunk in corpus.chunks], "passage")
    queries = await embedder.embed([question.text for question in corpus.questions], "query")
    matrix = np.asarray(passages, dtype=np.float32).reshape(len(corpus.chunks), -1)
    asked = np.asarray(queries, dtype=np.float32).reshape(len(corpus.questions), -1)
    return tuple(tuple(float(value) for value in row) for row in asked @ matrix.T)


async def evaluate_knowledge(
    corpus: KnowledgeCorpus,
    counter: TokenCounter,
    *,
    methods: Sequence[Method] = (LEXICAL,),
    embedder: Embedder | None = None,
    budget: int | None = None,
) -> tuple[KnowledgeOutcome, ...]:
    """One outcome per question and method, methods in the order given."""
    if HYBRID in methods and embedder is None:
        raise ValueError("the hybrid ranking needs an embedder")
    budget = knowledge_budget() if budget is None else budget
    verified = _candidates(corpus.chunks, LinkLevel.VERIFIED)
    anonymous = _candidates(corpus.chunks, LinkLevel.ANONYMOUS)
    audience_of = {chunk.item.id: chunk.audience for chunk in corpus.chunks}
    cosines = None
    if HYBRID in methods and embedder is not None:
        cosines = await _cosines(corpus, embedder)
    outcomes: list[KnowledgeOutcome] = []
    for method in methods:
        for number, question in enumerate(corpus.questions):
            asked = cosines[number] if cosines is not None else None
            seen = _slice(method, question.text, verified, asked, budget, counter)
            visitor = _slice(method, question.text, anonymous, asked, budget, counter)
            outcomes.append(_outcome(method, question, seen, visitor, audience_of))
    return tuple(outcomes)
